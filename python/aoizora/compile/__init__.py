"""Compiling candidates: the jobs (lower, compile, analyse), where they run (local workers or
Ray), the cache of their outputs, and what they compile for (a TPU topology through libtpu,
deviceless, or CPU devices). Import `aoizora.compile.jaxenv` before jax."""
