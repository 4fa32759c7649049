"""The web view's wording in English and Chinese (``PGMEM_LANGUAGE`` / ``--language``)."""

from __future__ import annotations

from collections.abc import Callable

from hello_pgmem.core.i18n import Language

LABELS: dict[str, tuple[str, str]] = {
    "title": ("hello_pgmem: what the agent remembers", "hello_pgmem：智能体记住了什么"),
    "memories": ("Memories", "记忆"),
    "search": ("Search", "搜索"),
    "graph": ("Graph", "知识图谱"),
    "knowledge": ("Documents", "文档"),
    "stats": ("Statistics", "统计"),
    "user": ("User", "用户"),
    "logout": ("Log out", "退出"),
    "login": ("Log in", "登录"),
    "token": ("Access token", "访问令牌"),
    "login_help": (
        "Paste a token made by “hello-pgmem token create”. It is kept in an HttpOnly cookie.",
        "粘贴由“hello-pgmem token create”生成的令牌，它保存在 HttpOnly Cookie 中。",
    ),
    "bad_token": ("This token is unknown, revoked or expired.", "此令牌未知、已撤销或已过期。"),
    "type": ("Type", "类型"),
    "all_types": ("all long-term", "全部长期记忆"),
    "session": ("Session", "会话"),
    "since": ("Since", "起始"),
    "until": ("Until", "截止"),
    "min_importance": ("Min. importance", "最低重要性"),
    "live_only": ("Hide forgotten", "隐藏已遗忘"),
    "filter": ("Filter", "筛选"),
    "content": ("Content", "内容"),
    "importance": ("Importance", "重要性"),
    "created": ("Created", "创建时间"),
    "accesses": ("Accesses", "访问次数"),
    "forgotten": ("forgotten", "已遗忘"),
    "forgotten_column": ("Forgotten", "已遗忘"),
    "next_page": ("Older", "更早"),
    "first_page": ("Newest", "最新"),
    "none": ("Nothing here.", "这里什么都没有。"),
    "live": ("Live", "有效"),
    "metadata": ("Metadata", "元数据"),
    "entities": ("Entities", "实体"),
    "relations": ("Relations", "关系"),
    "versions": ("Versions", "版本"),
    "valid_from": ("Held from", "成立自"),
    "valid_to": ("Held until", "成立至"),
    "superseded": ("Retired", "废止于"),
    "updated": ("Updated", "更新时间"),
    "recorded": ("Recorded", "记录时间"),
    "last_access": ("Last access", "最近访问"),
    "embedding": ("Embedding model", "嵌入模型"),
    "query": ("Query", "查询"),
    "scoring": ("Scoring", "打分方式"),
    "limit": ("Results", "结果数"),
    "time_range": ("Time range the search read from the query", "搜索从查询中读出的时间范围"),
    "no_time_range": ("none", "无"),
    "score": ("Score", "得分"),
    "sql": ("The SQL that ran", "执行的 SQL"),
    "valid_at": ("Held at (UTC)", "成立于（UTC）"),
    "known_at": ("As known at (UTC)", "按当时所知（UTC）"),
    "reference_sql": (
        "The reference's formulas rank each memory type by a statement of its own.",
        "参考实现的公式对每种记忆类型各用一条语句排序。",
    ),
    "sql_literal": ("With its parameters, to paste into psql", "代入参数后的语句（可粘贴到 psql）"),
    "search_note": (
        "Searches the long-term memories (episodic and semantic) with the library's ranking; "
        "nothing is recorded as an access.",
        "用库的排序搜索长期记忆（情景和语义），不记录访问。",
    ),
    "entity": ("Entity", "实体"),
    "depth": ("Depth", "深度"),
    "draw": ("Draw", "绘制"),
    "path_from": ("Path from", "路径起点"),
    "path_to": ("to", "终点"),
    "find_path": ("Find path", "查找路径"),
    "no_path": ("These two entities are not connected.", "这两个实体之间没有路径。"),
    "top_entities": ("Most mentioned entities", "提及最多的实体"),
    "mentions": ("Mentions", "提及次数"),
    "namespace": ("Namespace", "命名空间"),
    "documents": ("Documents", "文档数"),
    "chunks": ("Chunks", "分块数"),
    "tokens": ("Tokens", "词元数"),
    "last_ingest": ("Last ingest", "最近导入"),
    "document_title": ("Title", "标题"),
    "source": ("Source", "来源"),
    "format": ("Format", "格式"),
    "position": ("#", "序号"),
    "heading_path": ("Heading path", "标题路径"),
    "by_type": ("Memories by type", "按类型统计的记忆"),
    "over_time": ("Memories created per month (live)", "每月新建的记忆（有效）"),
    "relation_weights": ("Strongest relations", "权重最高的关系"),
    "weight": ("Weight", "权重"),
    "avg_importance": ("Avg. importance", "平均重要性"),
    "oldest": ("Oldest", "最早"),
    "embedding_queue": ("Waiting for their vectors", "等待向量化"),
    "waiting": ("Waiting", "等待中"),
    "failing": ("Failing", "失败中"),
    "next_retry": ("Next try", "下次重试"),
    "last_error": ("Last error", "最近的错误"),
    "newest": ("Newest", "最新"),
    "not_found": ("Not found", "未找到"),
    "bad_input": ("Bad input", "输入有误"),
    "read_only": ("Read-only view", "只读视图"),
}


def translator(language: Language) -> Callable[[str], str]:
    """``t(key)``: the wording of ``key`` in ``language``."""
    index = 1 if language == "zh" else 0

    def t(key: str) -> str:
        return LABELS[key][index]

    return t
