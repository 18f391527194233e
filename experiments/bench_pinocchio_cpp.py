"""Issue 19's rigid-body target against Pinocchio's C++ itself.

`bench_rigid_body.py` times Pinocchio through its Python bindings in a Python
loop, which adds the bindings' call cost to every state. This builds
``experiments/pinocchio_bench.cpp`` against the installed `pin` wheel
(its headers and ``libpinocchio_default``, whose precompiled ``crba``, ``rnea``
and ``aba`` are the code the bindings call; Eigen and urdfdom headers, which
the wheel does not ship, are pip-installed into ``results/``), runs it on the
robots of its ``[dynamics]`` settings and puts its times beside jaxfric's (the
better of ``vmap`` and chunks, float64, from `bench_rigid_body.bench_dynamics`)
and the Python loop's. Checked: jaxfric per state within ``target`` × the C++
time for each quantity (forward dynamics against ``aba``; the mass matrix and
the bias forces together, what a simulation evaluates, against ``crba`` +
``nonLinearEffects``, in one loop). Needs ``g++`` and network access to PyPI
for the headers. The C++ reference is the wheel's generic x86-64 build (a
``-march=native`` build of this file crashed against it); the C++ draws its own
random states from the same distributions as `random_robot_states`.
Writes ``results/bench_pinocchio_cpp/summary.json`` and ``figure.png``.

Run: ``python experiments/bench_pinocchio_cpp.py [SETTINGS.toml]``.
"""

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import bench_rigid_body as rigid_bench
import numpy as np
from _common import (
    claim,
    example_robot_urdf,
    load_average,
    load_settings,
    print_claims,
    print_table,
    results_dir,
    write_json,
)

NAME = "bench_pinocchio_cpp"
# C++ result name -> jaxfric quantity of bench_rigid_body.
_PAIRS = {
    "crba": "mass_matrix",
    "rnea": "rnea",
    "aba": "forward_dynamics",
    "mh": "mass_and_bias",
}


def build(settings, out: Path) -> Path:
    """Compile the C++ bench against the wheel; returns the binary."""
    prefix = Path(importlib.metadata.distribution("pin").locate_file("cmeel.prefix"))
    headers = out / "headers"
    installed = {p.name.split("-")[0] for p in headers.glob("*.dist-info")}
    wanted = {h.split("==")[0].replace("-", "_") for h in settings["headers"]}
    if not wanted <= installed:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps",
             "--target", str(headers), *settings["headers"]],
            check=True,
        )  # fmt: skip
    binary = out / "pinocchio_bench"
    lib = prefix / "lib"
    command = [
        "g++", *settings["cxxflags"], *(f"-D{d}" for d in settings["defines"]),
        f"-I{prefix / 'include'}",
        f"-I{prefix / 'include' / 'pinocchio' / 'deprecated'}",
        "-isystem", str(headers / "cmeel.prefix" / "include" / "eigen3"),
        "-isystem", str(headers / "cmeel.prefix" / "include" / "urdfdom_headers"),
        str(Path(__file__).parent / "pinocchio_bench.cpp"), "-o", str(binary),
        f"-L{lib}", f"-Wl,-rpath,{lib}", *(f"-l{x}" for x in settings["libraries"]),
    ]  # fmt: skip
    print(" ".join(command), flush=True)
    subprocess.run(command, check=True)
    return binary


def cpp_times(binary: Path, urdf: str, settings) -> dict[str, float]:
    """Best µs per state of each C++ quantity over `runs` runs."""
    best: dict[str, float] = {}
    for _ in range(settings["runs"]):
        command = [binary, urdf, settings["cpp_states"], settings["cpp_repeats"]]
        text = subprocess.run(
            [str(c) for c in command], check=True, capture_output=True, text=True
        ).stdout
        for name, value in re.findall(r"RESULT (\w+)\s+best_us_per_state=(\S+)", text):
            best[name] = min(best.get(name, np.inf), float(value))
    return best


def main() -> bool:
    settings = load_settings(NAME)
    out = results_dir(NAME)
    binary = build(settings, out)
    dynamics = settings["dynamics"]
    jax_rows = rigid_bench.bench_dynamics(dynamics)
    rows, claims = [], []
    for robot, relative in dynamics["robots"].items():
        cpp = cpp_times(binary, example_robot_urdf(relative), settings)
        load = load_average()
        ours = {r["quantity"]: r for r in jax_rows if r["robot"] == robot}
        for name, quantity in _PAIRS.items():
            row = ours[quantity]
            reference = cpp[name]
            best = min(row["jaxfric_batch_us"], row["jaxfric_chunked_us"])
            rows.append(
                dict(
                    robot=robot,
                    quantity=row["quantity"],
                    cpp=name,
                    cpp_us=reference,
                    python_loop_us=row["pinocchio_us"],
                    jaxfric_us=best,
                    ratio=best / reference,
                    load=load,
                )
            )
        claims += [
            claim(
                r["ratio"] <= settings["target"],
                f"{robot} {r['quantity']}: jaxfric {r['jaxfric_us']:.2f} µs/state, "
                f"Pinocchio C++ {r['cpp']} {r['cpp_us']:.2f} ({r['ratio']:.2f}×); "
                f"target <= {settings['target']:g}×",
                ratio=r["ratio"],
            )
            for r in rows
            if r["robot"] == robot
        ]
    table = print_table(
        rows,
        [
            ("robot", "robot", ""),
            ("quantity", "jaxfric", ""),
            ("cpp", "Pinocchio", ""),
            ("jaxfric_us", "jaxfric µs/state", ".2f"),
            ("cpp_us", "C++ µs/state", ".2f"),
            ("python_loop_us", "Python loop µs/state", ".2f"),
            ("ratio", "jaxfric / C++", ".2f"),
        ],
    )
    ok = print_claims(claims)
    fig = make_figure(rows)
    fig.savefig(out / "figure.png", dpi=130)
    write_json(
        {
            "experiment": NAME,
            "settings": settings,
            "pin": importlib.metadata.version("pin"),
            "rows": rows,
            "table_markdown": table,
            "claims": claims,
        },
        out / "summary.json",
    )
    print(f"wrote {out / 'figure.png'} and {out / 'summary.json'}")
    return ok


def make_figure(rows):
    """µs per state: jaxfric, Pinocchio's C++ and its Python loop."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), layout="constrained")
    ax = fig.subplots()
    labels = [f"{r['robot']}\n{r['cpp']}" for r in rows]
    x = np.arange(len(rows))
    for k, (key, name) in enumerate(
        [("jaxfric_us", "jaxfric (best of vmap, chunks)"),
         ("cpp_us", "Pinocchio C++"), ("python_loop_us", "Pinocchio Python loop")]
    ):  # fmt: skip
        ax.bar(x + (k - 1) * 0.27, [r[key] for r in rows], 0.27, label=name)
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("µs per state")
    ax.legend(fontsize=8)
    return fig


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
