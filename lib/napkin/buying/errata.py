"""Chapter 8, what to buy: the essay's coding agent, whose long prompt makes prefill the
wall, against the chapter's ranking of machines.

The essay: "prefill is the wall you'll hit, and it's the wall Apple hardware is worst at",
after "a Mac Studio punches above its FLOPs on single-stream decode and falls behind badly
on long prompts", and its table's "Unified-memory machines; prefill is their weak phase".
Read in that context the claim is about Apple's phases: prefill is the phase Apple's chips
are worst at. That is what the check tests; it also reports the other reading (Apple's
chips the slowest of all at prefill), which the data do not bear out.
"""

from __future__ import annotations

from .. import buying
from ..errata.finding import Finding

#: The notebook these checks belong to (the errata page groups them by it).
CHAPTER = "08_what_to_buy"


def coding_agent_prefill_wall() -> Finding:
    agent = buying.presets()["coding agent"]
    ranked = buying.rank(agent)
    top = ranked[ranked["rank"].notna()]
    apple = top[top["vendor"] == "Apple"].iloc[0]
    above = top[top["rank"] < apple["rank"]]
    share = apple["ttft_mid_s"] / (apple["ttft_mid_s"] +
                                   agent.output_tokens / apple["decode_mid_tok_per_s"])
    desk = top[buying.on_desk(top)]
    fastest = desk.sort_values("decode_mid_tok_per_s", ascending=False).iloc[0]
    others = desk[desk["vendor"] != "Apple"].set_index("machine")
    slower = others[others["ttft_mid_s"] > apple["ttft_mid_s"]]
    dense = buying.extrapolation_summary().set_index("group").loc["dense"]
    nvidia_above = len(above) > 0 and (above["vendor"] == "NVIDIA").all()
    holds = bool(nvidia_above and share > 0.5 and fastest["vendor"] == "Apple")
    return Finding(
        data_says=f"with {agent.model} at {agent.weight_format}, the best Apple chip "
                  f"({apple['machine']}) waits {apple['ttft_mid_s']:.0f} s for the first "
                  f"token, {share:.0%} of its whole request, and ranks "
                  f"{int(apple['rank'])} of {len(top)} at it; every machine that answers "
                  f"sooner is an NVIDIA GPU ({', '.join(above['machine'])}). At decode the "
                  f"{fastest['machine']} leads the machines on a desk "
                  f"({fastest['decode_mid_tok_per_s']:.1f} tokens/s, against "
                  + ", ".join(f"{n} {r['decode_mid_tok_per_s']:.1f}"
                              for n, r in others.iterrows()) + ")"
                  + "".join(f"; {n} waits {r['ttft_mid_s']:.0f} s for the first token, "
                            f"longer than the {apple['machine']}"
                            for n, r in slower.iterrows()),
        verdict="agrees" if holds else "inconsistent",
        conclusion_holds=holds,
        explanation="The essay's sentence follows its point that a Mac punches above its "
                    "FLOPs at decode and falls behind on long prompts, so it is read as: "
                    "prefill is the phase Apple's chips are worst at. The data agree: "
                    "Apple's chips lead the machines on a desk at decode, and every machine "
                    "that answers the long prompt sooner than the best of them is an NVIDIA "
                    "GPU; the wait is most of the request. Read instead as 'Apple's chips "
                    "are the slowest of all at prefill', the data do not bear it out: "
                    + (", ".join(slower.index) + " is no faster than the best Mac. "
                       if len(slower) else "")
                    + "The seconds are estimated from published llama.cpp pp512 runs of "
                    "Llama-2-7B (chapter 8); on dense models that method's predicted rate was "
                    f"{dense['low']:.2f} to {dense['high']:.2f} times the measured one.",
        essay_values={"prompt_k_tokens": agent.prompt_tokens / 1000},
    )
