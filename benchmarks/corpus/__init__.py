"""`make corpus`: nkic measured against public NKI kernels that nobody here wrote.

Discovers the kernel files of checkouts of aws-neuron/nki-library, aws-neuron/nki-samples and
aws-neuron/aws-neuron-sdk, runs `nkic check` on each, compiles and runs the NKI Library kernels
at the shapes of the library's own integration tests, and writes `docs/coverage.md`.
The public code is only read and run, never copied into this repository.
"""
