"""Words that are never entities, whatever an extractor says: interjections, pronouns, question
words, greetings and the function words that open a sentence with a capital letter (English and
Chinese). Dialogue is full of them ("Wow", "Thanks", "What", "You", "哈哈", "什么"); as entities
they link every chat turn to every other and drown the graph branch of search in noise."""

from __future__ import annotations

_ENGLISH_WORDS = """
    a about absolutely actually after again ah aha all alright also always am amazing an and
    another any anyone anything anyway are aren't as at aw aww awesome bad be because been before
    being best better both but by bye can can't cheers congrats congratulations cool could couldn't
    dear definitely did didn't do does doesn't doing don't done each either else even ever every
    everyone everything exactly fantastic few fine first for from fun gee glad good goodbye gosh
    got great guess had has hasn't have haven't having he he's hello her here hers herself hey hi
    him himself his hmm hmmm honestly hope how how's however huh i i'd i'll i'm i've if in indeed
    is isn't it it's its itself just kinda last later let let's like lol lots love maybe me mine
    more most much must my myself nah neat never next nice no nobody none nope nor not nothing now
    of off oh ok okay omg on once one only oops or other our ours ourselves out over perfect please
    pretty quite rather really right same see seems she she's should so some someone something
    sometimes soon sorry sounds still such super sure sweet thank thanks that that's the their
    theirs them themselves then there there's these they they're thing things this those though
    thx too totally true truly ty ugh uh uhm um umm until very was wasn't we we're we've well were
    weren't what what's whatever when where where's whether which while who who's whom whose why
    with without wonderful wow would wouldn't yay yeah yep yes yet you you'd you'll you're
    you've your yours yourself yourselves yup
"""
ENGLISH = frozenset(_ENGLISH_WORDS.split())

_CHINESE_WORDS = """
    我 你 您 他 她 它 我们 你们 他们 她们 它们 咱 咱们 自己 大家 别人 人家 这 那 这个 那个 这些 那些
    这里 那里 这儿 那儿 什么 谁 哪 哪个 哪里 哪儿 怎么 怎样 怎么样 为什么 为何 多少 几 如何 何时
    啊 呀 哇 哦 噢 喔 嗯 唉 哎 哎呀 哈 哈哈 哈哈哈 嘿 嘿嘿 呵呵 嘻嘻 哼 嗨 喂 吧 呢 吗 嘛 啦 咯
    谢谢 多谢 感谢 不客气 没关系 对不起 抱歉 你好 您好 再见 拜拜 晚安 早安 好的 好吧 好啊 可以 行 对
    是的 不是 没有 真的 当然 其实 然后 但是 所以 因为 如果 还是 或者 而且 不过 已经 一下 一起 一点
    今天 昨天 明天 现在 刚才 最近 以前 以后
"""
CHINESE = frozenset(_CHINESE_WORDS.split())


_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~！？。，、；：…—·「」『』（）《》“”‘’ "


def is_not_an_entity(normalized_name: str) -> bool:
    """True for a normalised name (lower case, single spaces) that is never an entity."""
    word = normalized_name.strip(_PUNCTUATION)
    return not word or word in ENGLISH or word in CHINESE
