#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The daemon's log as kube-proxy's: klog's text lines by default (every
# line "Lmmdd hh:mm:ss.uuuuuu PID file:line] ..."), component-base's JSON
# lines with --logging-format=json or the KubeProxyConfiguration's
# logging.format (every stderr line a JSON object with ts, caller, msg),
# and klog's verbosity: -v 2 adds each sync's summary (kube-proxy's
# "SyncProxyRules complete"), -v 4 the details, -v 0 neither; --vmodule
# raises one source file's verbosity; klog's --log-file with
# --logtostderr=false writes the lines to the file.  A one-shot
# mode's errors stay plain "error: ..." lines unless --logging-format is
# given.  The daemon runs alone in a namespace of its own (lib/daemon-ns.sh).
. "$(dirname "$0")/lib/daemon-ns.sh"
dn_init daemon-logging "$@"
command -v python3 >/dev/null || { echo "*** SKIPPED: needs python3 ***" >&2; exit 77; }

ARGS=(--min-sync-period 100ms --sync-period 1s --healthz-bind-address 127.0.0.1:0
      --metrics-bind-address 127.0.0.1:0)

# Every line of FILE a JSON object as component-base writes one.
all_json() {
	python3 - "$1" <<'PY'
import json, sys
n = 0
for i, line in enumerate(open(sys.argv[1], encoding="utf-8", errors="strict"), 1):
    o = json.loads(line)
    assert isinstance(o, dict), (i, line)
    assert isinstance(o["ts"], (int, float)) and o["ts"] > 1e12, (i, line)
    assert ":" in o["caller"] and isinstance(o["msg"], str), (i, line)
    n += 1
assert n > 0, "no lines"
PY
}

# Every line of FILE klog's header, then the message.
all_klog() {
	local bad
	bad=$(grep -cv '^[IWE][01][0-9][0-3][0-9] [0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9]\{6\} \{1,7\}[0-9]\{1,\} [a-z0-9_]*\.c:[0-9]\{1,\}\] ' "$1")
	[ "$bad" = 0 ] || fail "$bad lines not klog's: $(grep -v '^[IWE][0-9]\{4\} ' "$1" | head -n 3)"
}

# run NAME ARGS...: the daemon for two syncs after the first, then SIGTERM;
# its stderr in $TMP/NAME.log.
run() {
	local name=$1
	shift
	legacy_config 3
	dn_start direct "${ARGS[@]}" "$@"
	wait_for 30 "$name: the first sync" grep -q 'sync (initial)' "${RUN_LOG:-$TMP/log}"
	legacy_config 4
	wait_for 30 "$name: the change in the kernel" sh -c \
		"iptables-legacy-save -t nat | grep -- '-A KUBE-NODEPORTS .*default/s[0-9]*\"' | grep -vc -- '-m nfacct' | grep -qx 4"
	sleep 1.5 # a periodic sync or two
	kill -TERM "$DAEMON"
	wait "$DAEMON" || fail "$name: exit $?"
	DAEMON=
	cp "$TMP/log" "$TMP/$name.log"
}

echo "# text (the default) at -v 0, 2 and 4"
run v0
run v2 --v=2
run v4 -v 4
for v in v0 v2 v4; do all_klog "$TMP/$v.log"; done
grep -q '^I[0-9]\{4\} .* svcnat .* running' "$TMP/v0.log" || fail "no start line at -v 0"
grep -q 'sync.c:[0-9]*\] sync (initial): ' "$TMP/v0.log" || fail "no first sync at -v 0"
grep -q 'sync (change)' "$TMP/v0.log" && fail "-v 0 logs each sync"
grep -q 'SyncProxyRules complete' "$TMP/v0.log" && fail "-v 0 logs kube-proxy's sync line"
grep -q 'oom_score_adj' "$TMP/v0.log" && fail "-v 0 logs the default oom_score_adj's failure"
grep -q '\] sync (change): ' "$TMP/v2.log" || fail "no sync summary at -v 2"
grep -q '\] "SyncProxyRules complete" ipFamily="IPv4" elapsed="[0-9.]*[mµn]*s"' "$TMP/v2.log" ||
	fail "no structured SyncProxyRules line at -v 2"
grep -q 'sync parts: ' "$TMP/v2.log" && fail "-v 2 logs the details"
grep -q 'sync parts: ' "$TMP/v4.log" || fail "no details at -v 4"
n0=$(wc -l <"$TMP/v0.log") n2=$(wc -l <"$TMP/v2.log") n4=$(wc -l <"$TMP/v4.log")
echo "# lines: -v 0: $n0, -v 2: $n2, -v 4: $n4"
[ "$n0" -lt "$n2" ] && [ "$n2" -lt "$n4" ] || fail "lines do not grow with -v: $n0 $n2 $n4"
# klog's --vmodule: the details of telemetry.c only, at -v 0
run vmod --vmodule=telemetry=4
grep -q 'telemetry.c:[0-9]*\] sync parts: ' "$TMP/vmod.log" || fail "--vmodule=telemetry=4: no details from telemetry.c"
grep -q '\] sync (change): ' "$TMP/vmod.log" && fail "--vmodule=telemetry=4 raised sync.c too"
# libmicrohttpd says nothing on its own, even at -v 4
grep -q 'libmicrohttpd\|MHD_OPTION' "$TMP/v4.log" && fail "libmicrohttpd's messages at -v 4"

echo "# kube-proxy's oomScoreAdj: -999 unless told (the daemon writes its own)"
# Lowering it needs CAP_SYS_RESOURCE: where a child of ours cannot, the
# daemon says so at -v 2 only, as kube-proxy does.
if sh -c 'echo -999 >/proc/self/oom_score_adj' 2>/dev/null; then want=-999; else want=; fi
legacy_config 3
dn_start direct "${ARGS[@]}" --v=2
wait_for 30 "the first sync" grep -q 'sync (initial)' "$TMP/log"
have=$(cat "/proc/$DAEMON/oom_score_adj")
if [ -n "$want" ]; then
	[ "$have" = -999 ] || fail "oom_score_adj $have, not -999"
else
	echo "# (no CAP_SYS_RESOURCE here: the failure is logged at -v 2)"
	grep -q '^I[0-9]\{4\} .*\] cannot set /proc/self/oom_score_adj to -999' "$TMP/log" ||
		fail "no -v 2 line for the failed default oom_score_adj"
fi
kill -TERM "$DAEMON"
wait "$DAEMON" || fail "exit $?"
dn_start direct "${ARGS[@]}" --oom-score-adj=500
wait_for 30 "the first sync" grep -q 'sync (initial)' "$TMP/log"
[ "$(cat "/proc/$DAEMON/oom_score_adj")" = 500 ] ||
	fail "--oom-score-adj=500: $(cat "/proc/$DAEMON/oom_score_adj")"
kill -TERM "$DAEMON"
wait "$DAEMON" || fail "exit $?"
DAEMON=

echo "# --logging-format=json at -v 4: every line JSON"
run json --logging-format=json -v 4
all_json "$TMP/json.log" || fail "a line is not JSON: $(head -n 3 "$TMP/json.log")"
grep -q '"msg":"SyncProxyRules complete","v":2,"ipFamily":"IPv4","elapsed":"' "$TMP/json.log" ||
	fail "no JSON SyncProxyRules line"
grep -q '"caller":"daemon/sync.c:[0-9]*","msg":"sync (initial): ' "$TMP/json.log" ||
	fail "no JSON first sync"

echo "# the KubeProxyConfiguration's logging.format and logging.verbosity"
cat >"$TMP/kp.yaml" <<'YAML'
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
logging:
  format: json
  flushFrequency: 0
  verbosity: 2
YAML
run kpc --config "$TMP/kp.yaml"
all_json "$TMP/kpc.log" || fail "a line is not JSON: $(head -n 3 "$TMP/kpc.log")"
grep -q '"msg":"SyncProxyRules complete","v":2' "$TMP/kpc.log" || fail "logging.verbosity 2 ignored"

echo "# a bad object while the daemon runs: an error line in each format"
legacy_config 3
dn_start direct "${ARGS[@]}" --logging-format=json
wait_for 30 "the first sync" grep -q 'sync (initial)' "$TMP/log"
printf '{"Services":[{"Name":"bad\\n\\u0001\\"q","Port":70000}]}\n' >"$TMP/c.tmp"
mv "$TMP/c.tmp" "$TMP/c.json"
wait_for 30 "the rejection" grep -q 'is not a valid' "$TMP/log"
kill -TERM "$DAEMON"
wait "$DAEMON" || fail "exit $?"
DAEMON=
all_json "$TMP/log" || fail "a line is not JSON: $(cat "$TMP/log")"
python3 - "$TMP/log" <<'PY' || fail "no JSON error line without v: $(cat "$TMP/log")"
import json, sys
errs = [json.loads(l) for l in open(sys.argv[1]) if '"rejected' in l or 'not a valid' in l]
assert errs and all("v" not in e for e in errs), errs
PY

echo "# one-shot modes: plain lines, unless --logging-format is given"
echo '{"Services": [' >"$TMP/broken.json"
"$SVCNAT" --dry-run --config "$TMP/broken.json" --hostname node-a >/dev/null 2>"$TMP/plain.err"
[ $? = 2 ] || fail "--dry-run of a broken file: not exit 2"
grep -q "^error: $TMP/broken.json: not JSON" "$TMP/plain.err" ||
	fail "one-shot error not plain: $(cat "$TMP/plain.err")"
"$SVCNAT" --dry-run --config "$TMP/broken.json" --hostname node-a --logging-format=json \
	--log-dir=/nonexistent >/dev/null 2>"$TMP/json.err"
all_json "$TMP/json.err" || fail "one-shot --logging-format=json: $(cat "$TMP/json.err")"
grep -q '"msg":"--log-dir: accepted and ignored: removed from kube-proxy' "$TMP/json.err" ||
	fail "the flag's warning is not a JSON line: $(cat "$TMP/json.err")"
# a command line that cannot be used: plain, as any command's
"$SVCNAT" --no-such-flag >/dev/null 2>"$TMP/usage.err"
[ $? = 2 ] || fail "--no-such-flag: not exit 2"
grep -q "^Try 'svcnat --help'" "$TMP/usage.err" || fail "usage error: $(cat "$TMP/usage.err")"
# klog's --log-file: the lines in the file with --logtostderr=false ...
RUN_LOG=$TMP/own.log run lfile --logtostderr=false --log-file "$TMP/own.log"
all_klog "$TMP/own.log"
grep -q 'sync.c:[0-9]*\] sync (initial): ' "$TMP/own.log" || fail "--log-file: no first sync in the file"
grep -q 'sync (initial)' "$TMP/lfile.log" && fail "--logtostderr=false: the sync line on stderr too"
[ "$(stat -c %a "$TMP/own.log")" = 600 ] || fail "--log-file: mode $(stat -c %a "$TMP/own.log")"
# ... and only a warning with --logtostderr=true (the default)
run lwarn --log-file "$TMP/unused.log"
grep -q '^W.*--log-file .* has no effect with --logtostderr=true' "$TMP/lwarn.log" || fail "no --log-file warning"
[ -e "$TMP/unused.log" ] && fail "--log-file made a file with --logtostderr=true"
echo "ok"
