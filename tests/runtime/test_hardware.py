"""The rules that turn this machine's devices into `precision` and
`jit_compile`. Each case sets the rule's inputs, not this machine's, so any
backend runs every case."""

import subprocess
import sys

import pytest

from keras_bert.runtime import hardware

pytestmark = pytest.mark.backend_independent


@pytest.mark.parametrize(
    "accelerator, bf16_cpu, hidden_dim, backend, expected",
    [
        (None, False, 768, "tensorflow", "float32"),  # No bf16 arithmetic.
        (None, True, 128, "tensorflow", "float32"),  # Tiny: too narrow to pay.
        (None, True, 256, "tensorflow", "float32"),  # Mini: too narrow to pay.
        (None, True, 768, "tensorflow", "mixed_bfloat16"),  # Base.
        (None, True, 768, "torch", "mixed_bfloat16"),
        (None, True, 768, "jax", "float32"),  # XLA's CPU bfloat16 never pays.
        ("gpu", False, 128, "jax", "mixed_bfloat16"),
        ("tpu", False, 128, "tensorflow", "mixed_bfloat16"),
    ],
)
def test_auto_precision_is_bfloat16_where_it_pays(
    monkeypatch, accelerator, bf16_cpu, hidden_dim, backend, expected
):
    monkeypatch.setattr(hardware, "accelerator", lambda: accelerator)
    monkeypatch.setattr(hardware, "cpu_has_bfloat16_arithmetic", lambda: bf16_cpu)
    monkeypatch.setattr(hardware, "keras_backend", lambda: backend)
    assert hardware.resolve_precision("auto", hidden_dim) == expected
    assert hardware.resolve_precision("float32", hidden_dim) == "float32"


@pytest.mark.parametrize(
    "jit_compile, accelerator, backend, expected",
    [
        ("auto", None, "tensorflow", False),  # TensorFlow's CPU kernels.
        ("auto", "gpu", "tensorflow", "auto"),
        ("auto", "tpu", "tensorflow", "auto"),
        ("auto", None, "jax", "auto"),
        ("auto", None, "torch", "auto"),
        (True, None, "tensorflow", True),
        (False, "gpu", "jax", False),
    ],
)
def test_auto_jit_compile_keeps_tensorflow_kernels_on_a_cpu(
    monkeypatch, jit_compile, accelerator, backend, expected
):
    monkeypatch.setattr(hardware, "accelerator", lambda: accelerator)
    monkeypatch.setattr(hardware, "keras_backend", lambda: backend)
    assert hardware.resolve_jit_compile(jit_compile) == expected


def test_bfloat16_arithmetic_read_from_the_cpu_flags(monkeypatch, tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    real_open = open

    def fake_open(path, *args, **kwargs):
        return real_open(cpuinfo if path == "/proc/cpuinfo" else path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake_open)
    cpuinfo.write_text("model name\t: X\nflags\t\t: fpu avx2 avx512f\n")
    assert not hardware.cpu_has_bfloat16_arithmetic()
    cpuinfo.write_text("model name\t: X\nflags\t\t: fpu avx512f avx512_bf16\n")
    assert hardware.cpu_has_bfloat16_arithmetic()
    cpuinfo.write_text("model name\t: X\nflags\t\t: fpu amx_bf16\n")
    assert hardware.cpu_has_bfloat16_arithmetic()


@pytest.mark.parametrize(
    "devices, env, expected",
    [
        ([], {}, False),
        (["/dev/nvidia0"], {}, True),
        (["/dev/accel0"], {}, True),
        ([], {"CUDA_VISIBLE_DEVICES": "0"}, True),
        ([], {"TPU_NAME": "my-tpu"}, True),
        ([], {"CUDA_VISIBLE_DEVICES": ""}, False),
    ],
)
def test_accelerator_expected_from_devices_or_environment(monkeypatch, devices, env, expected):
    monkeypatch.setattr(hardware, "accelerator_devices", lambda: devices)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("TPU_NAME", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert hardware.accelerator_expected() == expected


def test_accelerator_is_none_or_a_device_kind():
    assert hardware.accelerator() in (None, "gpu", "tpu")


def test_importing_it_loads_no_framework():
    code = (
        "import importlib.util, sys; spec = importlib.util.spec_from_file_location("
        f"'hardware', {hardware.__file__!r}); "
        "spec.loader.exec_module(importlib.util.module_from_spec(spec)); "
        "print(sorted({'keras', 'tensorflow', 'jax', 'torch'} & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout == "[]\n"
