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
on the CPU needs a C++ compiler (g++) at run time.
"""
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


def prepare(model, mode):
    """The model as the mode runs it (moved to channels_last, compiled)."""
    if mode in ("channels_last", "compiled"):
        model = model.to(memory_format=torch.channels_last)
    if mode == "compiled":
        model = torch.compile(model)
    return model


def prepare_input(x, mode):
    """A 4-D input batch as the mode feeds it."""
    if mode in ("channels_last", "compiled") and x.dim() == 4:
        return x.contiguous(memory_format=torch.channels_last)
    return x


def describe():
    """One line for the header of a benchmark's output."""
    return f"torch {torch.__version__} (oneDNN {'yes' if torch.backends.mkldnn.is_available() else 'no'})"
