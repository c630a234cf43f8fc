"""Hypothesis strategies for fuzzing: grammar-generated programs seeded with hazards.

Programs from hypothesmith alone almost never reach a rule, so each one is combined with
snippets that do, at module level and inside a function.
"""

from __future__ import annotations

import textwrap

import hypothesmith
from hypothesis import strategies as st

HAZARDS = (
    "import torch\ndef f(x, dtype=torch.float32):\n    return x\n",
    "import jax.numpy as jnp\nclass D(nn.Module):\n    dtype: jnp.dtype = jnp.float32\n",
    "d = table.get(p, torch.float32)\n",
    "import jax\nparams = jax.tree_map(lambda x: x.astype(jnp.bfloat16), params)\n",
    "from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=2, collate_fn=lambda b: b)\n",
    "import torch.multiprocessing as mp\ndef main():\n    def w(r): ...\n    mp.spawn(w, nprocs=2)\n",
    "class B(nn.Module):\n    def __init__(self):\n        self.act = lambda x: x\n"
    "    def forward(self, x):\n        return x.to(torch.float32)\n",
    "model = nn.Linear(2, 2)\nmodel.half()\nsd = {k: v.half() for k, v in model.state_dict().items()}\n",
    "dtype = torch.bfloat16 if p == 'bf16' else torch.float32  # noqa: DTL1\n",
)


# Built once: constructing the grammar strategy costs seconds.
PROGRAMS = hypothesmith.from_grammar()


@st.composite
def seeded_programs(draw) -> str:
    program = draw(PROGRAMS)
    if program and not program.endswith("\n"):
        program += "\n"
    snippets = draw(st.lists(st.sampled_from(HAZARDS), max_size=3))
    inside = draw(st.sampled_from(HAZARDS))
    wrapped = "def _seeded():\n" + textwrap.indent(inside, "    ")
    order = draw(st.permutations([program, wrapped, *snippets]))
    return "".join(order)
