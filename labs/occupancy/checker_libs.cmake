# The trusted checker of lab occupancy asks the GPU for the live case's expected values
# (lab.toml [checker] gpu = true): the occupancy API about its own copies of the probe
# kernels (live_reference.cu, probes.cuh), through the CUDA runtime.
target_sources(${lab}_checker PRIVATE "${dir}/live_reference.cu")
target_link_libraries(${lab}_checker PRIVATE CUDA::cudart_static)
