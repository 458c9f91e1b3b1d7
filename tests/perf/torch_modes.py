"""torch_modes.py: how the PyTorch peers of tests/perf run a model, shared by
compare_pytorch.py, cifar_ddp_vs_torch.py and mnist_nn_vs_torch.py, so that all three
accept any python3 with any torch (Debian's 1.13, PyPI's 2.x) and say what they ran.

Modes (what a user choosing PyTorch today would try, in order of effort):
  eager          the model as written, NCHW tensors (PyTorch's default)
  channels_last  model and input in torch.channels_last (NHWC): oneDNN's CPU
                 convolutions then need no reorder around each call
  compiled       channels_last + torch.compile (Inductor fuses batch norm, ReLU and the
                 residual add into generated C++ loops); torch >= 2.0 only

The PyPI wheel of torch 2.x is the CUDA build; on a machine without a GPU it imports
once the nvidia-* libraries pip installed beside it are found (if `import torch` fails
there, put the venv's site-packages/nvidia/*/lib on LD_LIBRARY_PATH). torch.compile
on the CPU needs a C++ compiler (g++) at run time; where Debian's python3-torch sits
beside the venv, inductor_link_fix() keeps Inductor's kernels vectorised (the
benchmarks print "Inductor vector ISA ..." to show it).

  /usr/bin/python3 -m venv /opt/torch2 && /opt/torch2/bin/pip install torch numpy
  /opt/torch2/bin/python tests/perf/compare_pytorch.py --bench ... --mode compiled
"""
import os
import stat
import sys
import tempfile

import torch

MODES = ("eager", "channels_last", "compiled")


def torch_major():
    return int(torch.__version__.split(".")[0])


def mode_skip_reason(mode):
    """None when this torch can run the mode, else why not (printed, and the mode skipped)."""
    if mode not in MODES:
        return f"unknown mode {mode!r} (expected one of {', '.join(MODES)})"
    if mode == "compiled" and (torch_major() < 2 or not hasattr(torch, "compile")):
        return f"mode compiled needs torch >= 2.0 (torch.compile); this is torch {torch.__version__}"
    return None


def parse_modes(text):
    """--mode's comma-separated list; exits with a message on an unknown name."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            raise SystemExit(f"--mode {m!r}: expected one of {', '.join(MODES)}")
    return modes


SYSTEM_LIBTORCH = "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so"
_link_fix = []  # what inductor_link_fix did, once per process


def inductor_link_fix():
    """Where Debian's python3-torch is installed beside a venv's torch 2.x (as on this
    project's machines), Inductor links its generated kernels with
    -L/usr/lib/x86_64-linux-gnu (Python's LIBDIR) ahead of the venv's torch/lib, so
    -ltorch_cpu finds Debian's 1.13 library, which lacks the SLEEF symbols the
    vectorised kernels call; g++'s --as-needed drops it, the probe that loads a test
    kernel fails, and Inductor silently generates scalar code (compiled then runs
    about 2x slower than eager: WRN-10-1, 1 thread, 0.14 against 0.07 s a step). The
    fix: a g++ wrapper that puts the running torch's lib directory first, and a cache
    directory of its own (the default one keeps the failed probe's results). Returns
    what it did, for the output's header, or None when nothing was needed."""
    if _link_fix:  # once: a second wrapper would wrap the first, which would exec itself
        return _link_fix[0]
    if mode_skip_reason("compiled") or not sys.platform.startswith("linux") or not os.path.exists(SYSTEM_LIBTORCH):
        _link_fix.append(None)
        return None
    tmp = tempfile.gettempdir()
    # Before Inductor's modules are imported: they read it then.
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(tmp, f"torchinductor_hv_{os.getuid()}"))
    import torch._inductor.config as inductor_config
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    cxx = inductor_config.cpp.cxx[1] or "g++"
    wrapper = os.path.join(tmp, f"hv_inductor_cxx_{os.getuid()}.sh")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec {cxx} -L"{lib}" "$@"\n')
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)
    inductor_config.cpp.cxx = (None, wrapper)
    _link_fix.append(f"Inductor links against {lib} first (a system libtorch shadows it)")
    return _link_fix[0]


def vector_isa():
    """The vector ISA Inductor's C++ kernels use ("INVALID_VEC_ISA": scalar code)."""
    try:
        import torch._inductor.cpu_vec_isa as isa
        return str(isa.pick_vec_isa())
    except Exception as e:  # an older torch lays its internals out otherwise
        return f"unknown ({type(e).__name__})"


def prepare(model, mode):
    """The model as the mode runs it (moved to channels_last, compiled)."""
    if mode in ("channels_last", "compiled"):
        model = model.to(memory_format=torch.channels_last)
    if mode == "compiled":
        inductor_link_fix()
        model = torch.compile(model)
    return model


def prepare_input(x, mode):
    """A 4-D input batch as the mode feeds it."""
    if mode in ("channels_last", "compiled") and x.dim() == 4:
        return x.contiguous(memory_format=torch.channels_last)
    return x


def describe_compiled():
    """For a header when the mode compiled runs: the link fix (if any) and the ISA."""
    fix = inductor_link_fix()
    return f"Inductor vector ISA {vector_isa()}" + (f"; {fix}" if fix else "")


def usable_modes(text):
    """--mode's list without the modes this torch cannot run, each skip said on a '#'
    line, and the compiled mode's header line when it runs."""
    modes = []
    for m in parse_modes(text):
        why = mode_skip_reason(m)
        if why:
            print(f"# skipped: {why}", flush=True)
        else:
            modes.append(m)
    if "compiled" in modes:
        print(f"# {describe_compiled()}", flush=True)
    return modes


def describe():
    """One line for the header of a benchmark's output."""
    return f"torch {torch.__version__} (oneDNN {'yes' if torch.backends.mkldnn.is_available() else 'no'})"
