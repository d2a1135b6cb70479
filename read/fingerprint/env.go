package fingerprint

import (
	"os"
	"slices"
	"strings"
)

// EnvRule says whether environment variables reach a verdict: a name, or
// every name starting with Prefix. The table is checked against what the
// packages the worker runs actually read (TestEnvRulesCoverWhatPackagesRead
// scans torch, transformers, tokenizers, safetensors, huggingface_hub, NumPy
// and ml_dtypes: their Python sources and the strings of their shared
// libraries), so a variable they read is either watched or listed here as
// irrelevant with the reason.
type EnvRule struct {
	Prefix  string
	Watched bool
	Why     string
}

// EnvRules: the longest matching prefix decides.
var EnvRules = []EnvRule{
	// What Python imports and what the dynamic loader links.
	{"PYTHON", true, "Python's own settings: import path, hash seed, startup file, warnings"},
	{"LD_PRELOAD", true, "libraries loaded into the worker before torch's"},
	{"LD_LIBRARY_PATH", true, "which BLAS/OpenMP/oneDNN libraries torch links at run time"},
	// torch and the kernel libraries it bundles.
	{"TORCH", true, "torch: dispatch, precision, linear/matmul paths, compile (TORCH_*, TORCHINDUCTOR_*, TORCHDYNAMO_*)"},
	{"PYTORCH_", true, "torch: allocator, JIT and fusion switches"},
	{"ATEN_", true, "ATEN_CPU_CAPABILITY picks ATen's kernels"},
	{"ONEDNN_", true, "oneDNN: ONEDNN_MAX_CPU_ISA, ONEDNN_DEFAULT_FPMATH_MODE … pick bf16 kernels and their rounding (read as prefix + name at run time)"},
	{"DNNL_", true, "oneDNN under its old name: DNNL_MAX_CPU_ISA …"},
	{"MKL", true, "MKL: MKL_ENABLE_INSTRUCTIONS, MKL_CBWR (reproducibility mode), threads"},
	{"OMP_", true, "OpenMP: thread count and schedule change reduction order"},
	{"GOMP_", true, "GNU OpenMP (libgomp bundled with torch)"},
	{"KMP_", true, "Intel OpenMP"},
	{"OPENBLAS_", true, "OpenBLAS (NumPy's BLAS): core type, threads"},
	{"GOTO_", true, "OpenBLAS's GotoBLAS names: thread count"},
	{"NNPACK_", true, "NNPACK (torch's CPU convolutions)"},
	{"FBGEMM_", true, "FBGEMM (torch's quantized and fp16 GEMMs): instruction set"},
	{"CUBLAS_", true, "cuBLAS workspace (a CUDA build of torch)"},
	{"CUDA_", true, "CUDA device visibility (a CUDA build of torch)"},
	{"NCCL_", true, "collective settings torch reads at import"},
	{"XLA_", true, "XLA_USE_BF16 / XLA_DOWNCAST_BF16 change transformers' dtypes"},
	{"NPY_", true, "NumPy: NPY_DISABLE_CPU_FEATURES / NPY_ENABLE_CPU_FEATURES pick its kernels"},
	{"NUMPY_", true, "NumPy: experimental dtype API, hugepages"},
	// transformers, tokenizers, safetensors, the hub.
	{"TRANSFORMERS_", true, "transformers: offline, SDPA, verbosity, kernels"},
	{"HF_", true, "huggingface_hub and transformers: cache location, offline, endpoint, token"},
	{"HUGGINGFACE_", true, "the hub's older cache and endpoint names"},
	{"HUGGING_FACE_HUB_TOKEN", true, "the hub's older token name"},
	{"XDG_CACHE_HOME", true, "the default cache folder (HF hub, torch)"},
	{"XDG_CONFIG_HOME", true, "default config folders torch reads"},
	{"XDG_CONFIG_DIRS", true, "default config folders torch reads"},
	{"XDG_DATA_HOME", true, "default data folder torch reads"},
	{"XDG_STATE_HOME", true, "default state folder torch reads"},
	{"TOKENIZERS_", true, "tokenizers: parallelism"},
	{"RAYON_", true, "tokenizers' thread pool"},
	{"SAFETENSORS_", true, "safetensors"},
	{"USE_", true, "transformers' framework switches (USE_TORCH, USE_TF, USE_TORCH_XLA, USE_HUB_KERNELS)"},
	{"ACCELERATE_", true, "accelerate's switches transformers reads when loading (device map, mixed precision)"},
	{"TRUST_REMOTE_CODE", true, "transformers' remote-code default"},
	{"FLASH_ATTENTION_", true, "attention kernel choice"},
	{"FSDP_", true, "transformers' loading path under FSDP"},
	{"RANK", true, "distributed rank: transformers' loading and tensor-parallel paths read it"},
	{"LOCAL_RANK", true, "distributed rank: transformers' loading paths read it"},
	{"WORLD_SIZE", true, "distributed world size: transformers' tensor-parallel path reads it"},
	{"LOCAL_WORLD_SIZE", true, "distributed world size"},
	{"MASTER_", true, "distributed rendezvous"},

	// Read by those packages, but by code a Phase 0 run never reaches.
	{"ACTIONS_ID_TOKEN_", false, "the hub's GitHub Actions login: credentials, not what is computed"},
	{"AOT", false, "torch.compile's ahead-of-time inductor: phase0 runs torch eagerly"},
	{"ASCEND_", false, "Ascend NPU devices: phase0 runs torch on the CPU"},
	{"AWS_", false, "SageMaker integration of transformers' Trainer"},
	{"BACKEND", false, "torch's test harness"},
	{"BENCHMARK_", false, "torch's benchmark harness"},
	{"BRANCH", false, "transformers' test harness"},
	{"CC", false, "C compiler for torch.compile and C++ extensions: phase0 runs torch eagerly"},
	{"CXX", false, "C++ compiler for torch.compile and C++ extensions"},
	{"CPLUS_INCLUDE_PATH", false, "C++ extension builds"},
	{"CI", false, "test harnesses (CI, CI_*): no computation depends on it"},
	{"CLAUDE_CONFIG_DIR", false, "the hub's agent skill installer (a CLI command)"},
	{"CLEARML_", false, "transformers' Trainer integrations (experiment tracking)"},
	{"COMET_", false, "transformers' Trainer integrations (experiment tracking)"},
	{"COMPILE_STROBELIGHT_", false, "torch.compile profiling"},
	{"CONDA_", false, "conda paths for torch's extension builds; the interpreter and its packages are stamped themselves"},
	{"CUDACXX", false, "CUDA extension builds"},
	{"CUDNN_", false, "cuDNN library search for extension builds"},
	{"CUTE", false, "CUTLASS DSL kernels for torch.compile on GPUs"},
	{"CUTLASS_", false, "CUTLASS kernels for torch.compile on GPUs"},
	{"DATABRICKS_", false, "transformers' Trainer integrations"},
	{"DCP_", false, "torch distributed checkpointing"},
	{"DEBUG_", false, "torch.compile debugging"},
	{"DISABLE_", false, "telemetry, Trainer integrations (DISABLE_MLFLOW_INTEGRATION …), CUPTI: nothing computed"},
	{"DISABLED_TESTS_FILE", false, "torch's test harness"},
	{"DISTRIBUTED_TESTS_", false, "torch's test harness"},
	{"DISTUTILS_USE_SDK", false, "Windows extension builds"},
	{"DO_NOT_TRACK", false, "the hub's telemetry"},
	{"DUMP_AOTI_", false, "torch.compile debugging"},
	{"EAGER_IMPORT", false, "huggingface_hub's lazy-import switch: what is imported is stamped anyway"},
	{"ECS_CONTAINER_", false, "transformers' Trainer integrations"},
	{"ENABLE_", false, "torch.compile templates and execution traces (GPU, profiling)"},
	{"FAKE_ALLOW_META", false, "torch.compile fake tensors"},
	{"FLYDSL_", false, "GPU kernel DSL for torch.compile"},
	{"FR_TRACE_", false, "torch distributed flight recorder"},
	{"FX_", false, "torch.fx graph printing"},
	{"GITHUB_ACTIONS", false, "the hub's CI detection for logins"},
	{"GLOG_", false, "logging of torch's C++ libraries"},
	{"HALIDE_", false, "torch.compile's Halide backend"},
	{"HCCL_", false, "Ascend collectives"},
	{"HELION_", false, "torch.compile's Helion backend"},
	{"HIP_", false, "ROCm GPU devices"},
	{"HSA_", false, "ROCm GPU devices"},
	{"INDUCTOR_", false, "torch.compile's inductor"},
	{"INIT_METHOD", false, "torch's distributed test harness"},
	{"INSIDE_RE_WORKER", false, "torch.compile's remote execution"},
	{"IS_FBCODE", false, "torch's Meta-internal build switch"},
	{"JAX_PLATFORMS", false, "torch's JAX interop in tests"},
	{"KINETO_", false, "torch's profiler"},
	{"KUBEFLOW_", false, "transformers' Trainer integrations"},
	{"LEVEL_ZERO_", false, "Intel GPU devices"},
	{"LOGLEVEL", false, "torch.distributed's launcher logging"},
	{"LOG_AUTOTUNE_RESULTS", false, "torch.compile autotuning"},
	{"LSAN_OPTIONS", false, "NumPy's test suite"},
	{"LTC_", false, "torch lazy tensors"},
	{"MAST_", false, "torch's Meta-internal scheduler"},
	{"MAX_JOBS", false, "C++ extension builds"},
	{"MLFLOW_", false, "transformers' Trainer integrations (experiment tracking)"},
	{"NETWORK_DEBUG_", false, "transformers' test harness"},
	{"NO_COLOR", false, "terminal colours"},
	{"NPU_", false, "Ascend NPU devices"},
	{"NUM_PARALLEL_PROCS", false, "torch's test harness"},
	{"NVSHMEM_", false, "GPU shared memory for torch.distributed"},
	{"NVTOOLSEXT_PATH", false, "Windows CUDA tools"},
	{"OAUTH_", false, "the hub's login (credentials)"},
	{"ONEAPI_ROOT", false, "Intel GPU toolchain for extension builds"},
	{"OPENID_PROVIDER_URL", false, "the hub's login (credentials)"},
	{"OPINFO_", false, "torch's test harness"},
	{"PARTITIONER_", false, "torch.compile's partitioner"},
	{"PATH", false, "compiler search for torch.compile and extension builds: phase0 runs torch eagerly"},
	{"PIP_", false, "pip, run by torch's build helpers"},
	{"PROCESSOR_ARCHITE", false, "Windows only"},
	{"PROGRAMFILES", false, "Windows only"},
	{"ProgramFiles", false, "Windows only"},
	{"PT2_", false, "torch.compile ids"},
	{"PT_HPU_", false, "Gaudi devices"},
	{"PYTEST_", false, "test harnesses"},
	{"QUACK_", false, "GPU kernels for torch.compile"},
	{"RAY_", false, "transformers' Trainer hyper-parameter search"},
	{"ROCM_", false, "ROCm GPU devices"},
	{"ROCR_", false, "ROCm GPU devices"},
	{"ROCSHMEM_", false, "ROCm GPU shared memory"},
	{"ROLE_", false, "torch.distributed's elastic launcher"},
	{"RPC_", false, "torch.distributed.rpc tests"},
	{"RUN_SLOW", false, "transformers' test harness"},
	{"RUST_", false, "Rust panic display and stack size in tokenizers and safetensors"},
	{"SAGEMAKER_", false, "SageMaker integration of transformers' Trainer"},
	{"SHELL", false, "the hub's CLI completion"},
	{"SKIP_CUDA_DOCTEST", false, "transformers' test harness"},
	{"SLOW_TESTS_FILE", false, "torch's test harness"},
	{"SM_", false, "SageMaker integration of transformers' Trainer"},
	{"SMDATAPARALLEL_", false, "SageMaker integration of transformers' Trainer"},
	{"SOURCE_DATE_EPOCH", false, "NumPy's build helpers"},
	{"SPACE_", false, "the hub's Spaces detection"},
	{"STRICT_DEFAULT", false, "torch.export"},
	{"SWANLAB_", false, "transformers' Trainer integrations (experiment tracking)"},
	{"SYSTEMROOT", false, "Windows only"},
	{"TEARDOWN_CUPTI", false, "torch's profiler"},
	{"TEMP_DIR", false, "torch's test harness"},
	{"TENSORBOARD_", false, "transformers' Trainer integrations"},
	{"TENSORIFY_", false, "torch.compile"},
	{"TEST_", false, "test harnesses"},
	{"TOKIO_", false, "async runtime of the hub's Rust transfer client"},
	{"TQDM_", false, "progress bars"},
	{"TRAINING_JOB_ARN", false, "SageMaker integration of transformers' Trainer"},
	{"TRITON_", false, "torch.compile's Triton backend (GPU)"},
	{"TW_", false, "torch's Meta-internal scheduler"},
	{"UNSAFE_SKIP_FSDP_", false, "torch.compile of FSDP modules"},
	{"USER", false, "user names in cache paths of torch.compile"},
	{"VCToolsInstallDir", false, "Windows only"},
	{"VIRTUAL_ENV", false, "torch's extension builds; the interpreter and its packages are stamped themselves"},
	{"VSCMD_", false, "Windows extension builds"},
	{"VSCODE_", false, "notebook progress display"},
	{"VERTEX_PRODUCT", false, "the hub's cloud detection"},
	{"WANDB_", false, "transformers' Trainer integrations (experiment tracking)"},
	{"WEBHOOK_SECRET", false, "the hub's webhook server"},
	{"WINDOWS_", false, "Windows only"},
	{"XDG_", false, "the other XDG variables (session id, runtime folder) change per login and no scanned package reads them"},
	{"ZE_", false, "Intel GPU devices"},
	{"_", false, "private markers of torch's and transformers' test harnesses and subprocesses"},
	{"debug_", false, "torch.compile debugging"},
}

// EnvRuleFor returns the rule deciding name (the longest matching prefix)
// and whether any rule does.
func EnvRuleFor(name string) (EnvRule, bool) {
	var best EnvRule
	found := false
	for _, r := range EnvRules {
		if strings.HasPrefix(name, r.Prefix) && (!found || len(r.Prefix) > len(best.Prefix)) {
			best, found = r, true
		}
	}
	return best, found
}

// EnvWatched says whether an environment variable reaches a verdict. A
// name no rule lists is not watched (an unknown variable that none of the
// scanned packages reads).
func EnvWatched(name string) bool {
	r, ok := EnvRuleFor(name)
	return ok && r.Watched
}

// Env is the sorted NAME=value list of the watched environment variables
// (see EnvRules).
func Env() []string {
	out := []string{}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if EnvWatched(name) {
			out = append(out, kv)
		}
	}
	slices.Sort(out)
	return out
}
