#!/usr/bin/env bash
# pool-demo's command line and capacity: a value an option does not take is one line naming the
# option and a non-zero exit (not the automatic choice, not 1 for 2); async on the sim driver, one
# line saying it needs the cuda driver; --driver cuda where there is none, the driver's reason; an
# unknown option, or one without its value, a line naming it, the usage and exit 2; --help and -h
# the usage and each option with its default on stdout, exit 0; a sim run says why it has no async
# row; a sim capacity the model cannot fit ends the demo at once with one
# line naming the sim driver; a capacity some sessions run out of stops each of those at its failing
# pass, says so, and exits non-zero, promptly.
#   check-demo-args.sh PATH/TO/pool-demo
set -u
demo=$1
failed=0
small=(--layers 1 --embd 64 --ff 64 --prompt 8 --tokens 2)
# a run that should be prompt: the whole default model runs in about a second on the sim driver
run() { timeout 60 env -u GGML_CUDA_POOL -u GGML_CUDA_NO_VMM -u GGML_CUDA_POOL_FAULT -u GGML_CUDA_POOL_LOG "$demo" "$@" 2>&1; }
fail() {
    echo "FAIL $1; output:"
    echo "$2" | head -20
    failed=1
}

for bad in "--driver gpu" "--overallocate 2" "--layers 2x" "--kinds legacy,fastest"; do
    option=${bad%% *}
    out=$(run "${small[@]}" $bad)
    rc=$?
    lines=$(grep -c -- "$option" <<<"$out")
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$lines" -ne 1 ] || [ "$(grep -c . <<<"$out")" -ne 1 ]; then
        fail "$bad: exit $rc, $lines lines naming $option" "$out"
    else
        echo "ok   $bad: exit $rc, one line: $out"
    fi
done

# async on the sim driver: one line saying it needs the cuda driver; the cuda driver where it cannot
# be made: one line with the driver's reason (on a GPU the demo runs)
out=$(run --driver sim --kinds legacy,async "${small[@]}")
rc=$?
if [ "$rc" -ne 2 ] || [ "$(grep -c . <<<"$out")" -ne 1 ] || ! grep -q "^pool-demo: --kinds async: .*needs the cuda driver" <<<"$out"; then
    fail "--driver sim --kinds legacy,async: exit $rc, wanted 2 and one line saying async needs the cuda driver" "$out"
else
    echo "ok   --driver sim --kinds legacy,async: exit 2, one line: $out"
fi
out=$(run --driver cuda "${small[@]}")
rc=$?
if [ "$rc" -ne 0 ] && ! grep -q "^pool-demo: the cuda driver is unavailable: cuda driver: ." <<<"$out"; then
    fail "--driver cuda: exit $rc without the driver's reason" "$out"
else
    echo "ok   --driver cuda: exit $rc$([ "$rc" -ne 0 ] && echo ", the reason: $out")"
fi

# an option the demo does not know is named, with the usage; so is one left without its value
for bad in "--bogus 1:unknown option '--bogus'" "--layers:--layers needs a value"; do
    args=${bad%%:*}
    said=${bad#*:}
    out=$(run $args)
    rc=$?
    if [ "$rc" -ne 2 ] || [ "$(grep -c "^pool-demo: $said\$" <<<"$out")" -ne 1 ] || ! grep -q "^usage: " <<<"$out"; then
        fail "$args: exit $rc, wanted 2, the line 'pool-demo: $said' and the usage" "$out"
    else
        echo "ok   $args: exit 2, the line 'pool-demo: $said' and the usage"
    fi
done

# --help and -h: the usage on stdout, nothing on stderr, exit 0
for help in --help -h; do
    err=$(timeout 60 "$demo" "$help" 2>&1 >/dev/null)
    out=$(timeout 60 "$demo" "$help" 2>/dev/null)
    rc=$?
    options=$(grep -Eo '^  --[a-z]+' <<<"$out" | tr -d ' ' | sort | tr '\n' ' ')
    if [ "$rc" -ne 0 ] || [ -n "$err" ] || ! grep -q "^usage: pool-demo " <<<"$out"; then
        fail "$help: exit $rc, wanted 0 and the usage on stdout alone (stderr: $err)" "$out"
    elif [ "$options" != "--capacity --driver --embd --ff --kinds --layers --overallocate --prompt --tokens " ] ||
        [ "$(grep -c '; default: ' <<<"$out")" -ne 9 ]; then
        fail "$help: each option on a line of its own with its default (listed: $options)" "$out"
    else
        echo "ok   $help: exit 0, the usage and each option with its default on stdout"
    fi
done

# a run on the sim driver says under its table why it has no async row
out=$(run --driver sim --layers 1 --prompt 16 --tokens 1)
if grep -q "^no async row: .*needs the cuda driver" <<<"$out"; then
    echo "ok   the sim driver's table says why it has no async row"
else
    fail "the sim driver's table does not say why it has no async row" "$(tail -5 <<<"$out")"
fi

out=$(run --driver sim --capacity 10)
rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$(grep -c . <<<"$out")" -ne 1 ] || ! grep -q "sim device" <<<"$out" ||
    grep -q "CUDA" <<<"$out"; then
    fail "--capacity 10: exit $rc, wanted one line naming the sim device and none claiming CUDA" "$out"
else
    echo "ok   --capacity 10: exit $rc, one line: $out"
fi

# 260 MiB holds the model at once (256 MiB), but not every kind's way of growing: those sessions stop
out=$(run --driver sim --capacity 260)
rc=$?
stopped=$(grep -c "ran out of memory at a context of [0-9]* tokens (the sim driver's --capacity)" <<<"$out")
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$stopped" -lt 1 ] || [ "$(grep -c "failed: out of memory" <<<"$out")" -gt 100 ]; then
    fail "--capacity 260: exit $rc, $stopped sessions said they stopped" "$out"
else
    echo "ok   --capacity 260: exit $rc, $stopped sessions stopped at their failing pass"
fi

out=$(run --driver sim "${small[@]}" --capacity 64)
rc=$?
[ "$rc" -eq 0 ] && echo "ok   a model that fits: exit 0" || fail "a model that fits: exit $rc" "$out"
exit $failed
