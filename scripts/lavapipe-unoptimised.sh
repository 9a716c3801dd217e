#!/bin/sh
# nextest setup script (.config/nextest.toml): the tests it is scoped to run with lavapipe's LLVM
# optimisation passes off (Mesa's GALLIVM_PERF=nopt). Those tests are compile-bound: lavapipe
# spends minutes optimising the specialised decoders and trainers they build, which then run for
# seconds. The tests that run shaders for minutes (the GPU trainer's quality run, the studio
# windows) keep the optimiser. Only llvmpipe and lavapipe read the variable; a hardware GPU's
# driver ignores it. The variable is a comma-separated list of flags: one already set (e.g.
# `no_aos_sampling`, which integrations/bevy's cargo config sets for its lit sphere) is kept.
echo "GALLIVM_PERF=${GALLIVM_PERF:+$GALLIVM_PERF,}nopt" >>"$NEXTEST_ENV"
