"""Chapter 8, what to buy: the essay's coding agent, whose long prompt makes prefill the
wall, against the chapter's ranking of machines."""

from __future__ import annotations

from .. import buying
from .finding import Finding


def coding_agent_prefill_wall() -> Finding:
    agent = buying.presets()["coding agent"]
    ranked = buying.rank(agent)
    top = ranked[ranked["rank"].notna()]
    apple = top[top["vendor"] == "Apple"].iloc[0]
    above = top[top["rank"] < apple["rank"]]
    share = apple["ttft_mid_s"] / (apple["ttft_mid_s"] +
                                   agent.output_tokens / apple["decode_mid_tok_per_s"])
    others = top[(top["vendor"] != "Apple") & (top["rank"] > apple["rank"])]["machine"]
    raised = ranked[ranked["fits_after_raising"]]["machine"]
    runs = buying.extrapolation_check()
    dense = buying.extrapolation_summary(runs).set_index("group").loc["dense"]
    deepest = int((runs["depth_tokens"] + runs["prompt_tokens"]).max())
    nvidia_above = len(above) > 0 and (above["vendor"] == "NVIDIA").all()
    holds = bool(nvidia_above and share > 0.5)
    return Finding(
        data_says=f"with {agent.model} at {agent.weight_format}, the first token takes "
                  f"{apple['ttft_mid_s']:.0f} s on the best Apple chip ({apple['machine']}, "
                  f"rank {int(apple['rank'])} of {len(top)}), {share:.0%} of its whole request; "
                  f"every machine above it is an NVIDIA GPU "
                  f"({', '.join(above['machine'])}; the H100 and A100 runs count for both "
                  f"variants, since their sources do not agree on which they are); below it "
                  f"only {', '.join(others) or 'Apple chips'} among the others"
                  + (f"; {', '.join(raised)} hold the model only after raising macOS's GPU "
                     "memory limit and are not ranked" if len(raised) else ""),
        verdict="agrees" if holds else "inconsistent",
        conclusion_holds=holds,
        explanation="Estimated from the prefill rates published llama.cpp pp512 runs of "
                    "Llama-2-7B reached (chapter 8). The same method predicts measured pp2048 "
                    f"rates of a dense model at up to {deepest:,} tokens of context at "
                    f"{dense['low']:.2f}x to {dense['high']:.2f}x the measured rate (median "
                    f"{dense['median']:.2f}x, {int(dense['runs'])} runs): the seconds are "
                    "rough, the order of the families holds. Apple's chips are the slowest "
                    "family at prefill, with AMD's Strix Halo among them rather than clearly "
                    "ahead.",
        essay_values={"prompt_k_tokens": agent.prompt_tokens / 1000},
    )
