# The test binaries whose code differs on an AVX2-only CPU (sourced, sets AVX2_PATH_TESTS): every
# CPU op's (tests/model/cpu_*_test.cpp, so that a new op's is not missed), the model's, the
# decoder's, the trainer's, the CPU peak's and bf16's. Longest first (under emulation the trainer's
# 9 minutes, then attention, matmul, the model's 4-6 each), so that parallel runs finish together.
# scripts/test.sh builds them for x86-64-v3 on a CPU with AVX-512; scripts/emulated_avx2_check.sh
# runs them on an emulated AVX2-only CPU.
AVX2_PATH_TESTS=(train_trainer_test model_cpu_attention_test model_cpu_matmul_test model_gpt_test)
for src in tests/model/cpu_*_test.cpp; do
  name=model_$(basename "$src" .cpp)
  [[ " ${AVX2_PATH_TESTS[*]} " == *" $name "* ]] || AVX2_PATH_TESTS+=("$name")
done
AVX2_PATH_TESTS+=(model_decoder_test train_cpu_peak_test core_bf16_test)
