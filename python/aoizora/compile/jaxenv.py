"""Environment for deviceless compilation. Import this before jax.

There is no TPU here: JAX runs on CPU devices while libtpu compiles for a TPU topology
(compile-only devices). These variables must be set before jax initialises its backends.
"""

import os

# Enough CPU devices for the CPU fallback of any slice we plan for up to 16 chips, and for
# the numerical tests on 8 devices.
CPU_DEVICES = 16


def _configure() -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    if os.environ["JAX_PLATFORMS"] == "cpu":
        # libtpu otherwise queries GCE metadata and warns about a missing TPU VM.
        os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
        os.environ.setdefault("TPU_WORKER_HOSTNAMES", "localhost")
        os.environ.setdefault("TPU_ACCELERATOR_TYPE", "v5litepod-8")
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        # Deviceless compiles hold no chip: let several processes (pytest, parallel
        # compile workers) load libtpu at once instead of failing on its lockfile.
        os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
        # libtpu writes an INFO log per process to /tmp/tpu_logs and never removes it (about
        # 2,000 files and 36 MB a day of planning and tests); a TPU_LOG_DIR the user set is kept.
        os.environ.setdefault("TPU_LOG_DIR", "disabled")
    # TPU compiles run with MaxDiffusion's scoped VMEM limit (kernels.SCOPED_VMEM_KIB): the
    # attention block search assumes it, and MaxDiffusion's tuned blocks need it. A limit the
    # user set is kept (kernels.scoped_vmem_bytes reads it back).
    from aoizora.planning.kernels import SCOPED_VMEM_FLAG, SCOPED_VMEM_KIB

    libtpu = os.environ.get("LIBTPU_INIT_ARGS", "")
    if SCOPED_VMEM_FLAG not in libtpu:
        os.environ["LIBTPU_INIT_ARGS"] = f"{libtpu} --{SCOPED_VMEM_FLAG}={SCOPED_VMEM_KIB}".strip()
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = (
            f"{flags} --xla_force_host_platform_device_count={CPU_DEVICES}".strip()
        )


_configure()
