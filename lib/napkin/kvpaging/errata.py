"""Chapter 6, paged attention: the vLLM paper's throughput gain and its "near-zero waste",
against the paper's own figures and the chapter's simulation."""

from __future__ import annotations

from .. import essay, papers
from ..kvpaging import chapter as paging_chapter
from ..errata.finding import Finding

#: The notebook these checks belong to (the errata page groups them by it).
CHAPTER = "06_paged_attention"

#: The essay's words about paging's KV waste, which it quotes from the paper.
NEAR_ZERO_WASTE = "near-zero waste"


def paged_throughput() -> Finding:
    low, high = essay.claim("paged_throughput_low"), essay.claim("paged_throughput_high")
    p_low = papers.claim("vllm_throughput_gain")
    p_high = papers.claim("vllm_throughput_gain", "high")
    oracle = (papers.claim("rate_vs_orca_oracle"),
              papers.claim("rate_vs_orca_oracle", "high"))
    worst = (papers.claim("rate_vs_orca_max"),
             papers.claim("rate_vs_orca_max", "high"))
    ft = papers.claim("rate_vs_fastertransformer")
    sim = paging_chapter.paper_reproduction().set_index("allocator")
    return Finding(
        data_says=f"the paper's abstract says {p_low:.0f}-{p_high:.0f}x; its section 6.2 "
                  f"measures {oracle[0]:.1f}-{oracle[1]:.1f}x the request rate of Orca "
                  f"(Oracle), {worst[0]:.1f}-{worst[1]:.0f}x of Orca (Max) and up to "
                  f"{ft:.0f}x of FasterTransformer; the simulation gives "
                  f"{sim.loc['oracle', 'throughput_gain']:.1f}x over Orca (Oracle) and "
                  f"{sim.loc['max', 'throughput_gain']:.1f}x over Orca (Max)",
        verdict="agrees" if (low, high) == (p_low, p_high) else "inconsistent",
        conclusion_holds=True,
        explanation="The essay quotes the abstract's headline. Per baseline the paper's own "
                    f"figures run wider, from {oracle[0]:.1f}x against an Orca that knows "
                    f"every output length to {ft:.0f}x against FasterTransformer. The essay's "
                    "reason, fitting more sequences, is consistent with the simulation "
                    f"({sim.loc['oracle', 'batch_gain']:.1f}x and "
                    f"{sim.loc['max', 'batch_gain']:.1f}x more sequences) but not tested by "
                    "it, since the simulation computes throughput from the batch. It fits the "
                    "Orca baselines, which schedule iteration by iteration as vLLM does; "
                    "against FasterTransformer the gain also includes the iteration-level "
                    "scheduling it lacks.",
    )


def paged_near_zero_waste() -> Finding:
    in_paper = NEAR_ZERO_WASTE in papers.quote("vllm_near_zero_waste")
    fig2 = papers.claim("fig2_vllm_token_states") / 100
    blog = papers.claim("blog_paged_waste", "high") / 100
    sim = 1 - paging_chapter.paper_reproduction().set_index("allocator").loc["paged", "token"]
    return Finding(
        data_says=f"the abstract uses these words; its Fig. 2 shows {fig2:.1%} of KV memory "
                  f"holding tokens ({1 - fig2:.1%} not), the launch blog says under {blog:.0%}; "
                  f"the simulation leaves {sim:.1%} not holding tokens",
        verdict="agrees" if in_paper and sim < blog else "inconsistent",
        conclusion_holds=True,
        explanation="The quote is the paper's. What remains is the unfilled tail of each "
                    "sequence's last block, under one block per sequence, plus the few blocks "
                    "vLLM keeps free when it admits a request.",
        essay_values={"words": NEAR_ZERO_WASTE},
    )
