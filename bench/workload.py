"""Deterministic synthetic memories in Chinese and English: people, places, products, dates,
preferences, events. The same seed gives the same memories on every machine."""

from __future__ import annotations

import random
from collections.abc import Iterator

SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈"
)
GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英华玉兰萍红亮建文辉"
CITIES = ["北京", "上海", "杭州", "深圳", "成都", "武汉", "西安", "南京", "广州", "苏州", "重庆", "厦门"]
CITIES_EN = ["London", "Paris", "Berlin", "Tokyo", "Seattle", "Toronto", "Sydney", "Madrid", "Oslo", "Boston"]
PRODUCTS = [
    "机械键盘",
    "降噪耳机",
    "咖啡机",
    "电动牙刷",
    "登山鞋",
    "投影仪",
    "空气炸锅",
    "智能手表",
    "扫地机器人",
    "平板电脑",
]
PRODUCTS_EN = [
    "laptop",
    "espresso machine",
    "road bike",
    "camera",
    "standing desk",
    "e-reader",
    "drone",
    "headphones",
]
FOODS = ["火锅", "川菜", "寿司", "拉面", "烧烤", "素食", "甜点", "粤菜", "饺子", "披萨"]
HOBBIES_EN = [
    "hiking",
    "chess",
    "jazz",
    "photography",
    "gardening",
    "running",
    "painting",
    "sailing",
    "baking",
]
SKILLS = [
    "Python",
    "Go",
    "Rust",
    "Java",
    "React",
    "Vue.js",
    "PostgreSQL",
    "Kubernetes",
    "Docker",
    "TypeScript",
]
ROLES = ["前端工程师", "后端工程师", "产品经理", "设计师", "数据分析师", "测试工程师", "架构师", "运维工程师"]
NAMES_EN = [
    "Alice",
    "Bob",
    "Carol",
    "David",
    "Emma",
    "Frank",
    "Grace",
    "Henry",
    "Iris",
    "Jack",
    "Kate",
    "Leo",
]

TEMPLATES_ZH = [
    "{p}是一名{role}，擅长{skill}和{skill2}开发",
    "{p}住在{city}，周末喜欢吃{food}",
    "{p}在{month}月{day}日买了一台{product}，觉得很好用",
    "{month}月{day}日，{p}和{p2}在{city}开了关于{skill}迁移的会议",
    "{p}不喜欢{food}，更偏好{food2}",
    "{p}上周去{city}出差，顺便见了老同学{p2}",
    "{p}负责的{skill}项目在{month}月上线，性能提升了{pct}%",
    "{p}的生日是{month}月{day}日，想要一台{product}作为礼物",
]
TEMPLATES_EN = [
    "{e} works as a {skill} developer and lives in {city_en}",
    "{e} prefers {hobby} on weekends and dislikes {hobby2}",
    "On {month}/{day} {e} bought a {product_en} for the new office",
    "{e} met {e2} in {city_en} to plan the {skill} rollout",
    "{e} is allergic to peanuts and avoids {food_en} restaurants",
    "{e} finished the {skill} certification with a score of {pct}",
]
FOODS_EN = ["Thai", "Italian", "Mexican", "Indian", "seafood", "burger"]


class Workload:
    """Memories and queries for one user, reproducible from ``seed``."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def _person(self) -> str:
        return (
            self.rng.choice(SURNAMES)
            + self.rng.choice(GIVEN)
            + ("" if self.rng.random() < 0.5 else self.rng.choice(GIVEN))
        )

    def _fill(self, template: str) -> str:
        r = self.rng
        skill, skill2 = r.sample(SKILLS, 2)
        food, food2 = r.sample(FOODS, 2)
        hobby, hobby2 = r.sample(HOBBIES_EN, 2)
        return template.format(
            p=self._person(),
            p2=self._person(),
            role=r.choice(ROLES),
            skill=skill,
            skill2=skill2,
            city=r.choice(CITIES),
            food=food,
            food2=food2,
            product=r.choice(PRODUCTS),
            month=r.randint(1, 12),
            day=r.randint(1, 28),
            pct=r.randint(5, 95),
            e=r.choice(NAMES_EN),
            e2=r.choice(NAMES_EN),
            city_en=r.choice(CITIES_EN),
            hobby=hobby,
            hobby2=hobby2,
            product_en=r.choice(PRODUCTS_EN),
            food_en=r.choice(FOODS_EN),
        )

    def memory(self) -> str:
        templates = TEMPLATES_ZH if self.rng.random() < 0.7 else TEMPLATES_EN
        return self._fill(self.rng.choice(templates))

    def memories(self, count: int) -> Iterator[tuple[str, float]]:
        for _ in range(count):
            yield self.memory(), round(self.rng.uniform(0.1, 1.0), 3)

    def query(self) -> str:
        """A short query in the style of the memories (shares some words with many of them)."""
        r = self.rng
        return r.choice(
            [
                f"{r.choice(ROLES)} {r.choice(SKILLS)}",
                f"住在{r.choice(CITIES)}的人",
                f"买了{r.choice(PRODUCTS)}",
                f"喜欢吃{r.choice(FOODS)}",
                f"{r.choice(SKILLS)} 项目上线",
                f"{r.choice(NAMES_EN)} {r.choice(HOBBIES_EN)}",
                f"meeting in {r.choice(CITIES_EN)}",
                f"{r.choice(CITIES)}出差",
            ]
        )

    def document(self, number: int) -> str:
        """A Markdown document of a few sections for the RAG corpus."""
        sections = []
        for s in range(self.rng.randint(3, 6)):
            paragraphs = "\n\n".join(
                " ".join(self.memory() + "。" for _ in range(self.rng.randint(2, 6)))
                for _ in range(self.rng.randint(1, 3))
            )
            sections.append(f"## 第{s + 1}节 {self.rng.choice(SKILLS)}\n\n{paragraphs}")
        return f"# 文档 {number}\n\n" + "\n\n".join(sections)
