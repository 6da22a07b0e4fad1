#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Fast restarts of the nft writer, in a network and mount namespace of its
# own (private /run; the runtime directory is $TMP/run): a process that
# ends keeps its state in a file with the ruleset generation it belongs
# to, and the next one (--once, or the daemon's first sync) takes it only
# while the generation is still that one.
#   - kept, trusted: the second --once and the daemon's first sync say so,
#     write nothing (every rule keeps its handle) and leave the tables as
#     the dry-run says;
#   - another writer between stop and start: iptables-nft replaces one of
#     svcnat's rules, ip6tables-nft deletes one; the next start does not
#     trust the file (the generation moved), reads, and repairs both;
#   - another program's unrelated commit (a table of its own): not
#     trusted either, read, nothing to write;
#   - a damaged file: one warning naming it, then a normal read and sync;
#     no file is written where the directory is writable by others.

. "$(dirname "$0")/lib/daemon-ns.sh"
dn_init nft-restart "$@"
for t in nft iptables-nft-save ip6tables-nft-save iptables-nft ip6tables-nft; do
	command -v "$t" >/dev/null || _dn_skip "needs $t"
done
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
CFG=$top_srcdir/contrib/examples/dual-stack.json
# shellcheck disable=SC2206
SETTINGS=(--node-ip 198.18.0.1 --node-ip 2001:2::1 --hostname node-a
	--cluster-cidr 198.18.64.0/18,2001:2:0:100::/56)
export SVCNAT_RUNTIME_DIR=$TMP/run

norm() {
	grep -v '^#' | sed -e 's/ \[[0-9]*:[0-9]*\]$//' \
		-e 's/\(--probability [0-9]\.[0-9]\{5\}\)[0-9]*/\1/'
}
"$SVCNAT" --dry-run --config "$CFG" "${SETTINGS[@]}" 2>/dev/null | norm >"$TMP/want" ||
	fail "--dry-run"
saves() {
	iptables-nft-save 2>/dev/null
	ip6tables-nft-save 2>/dev/null
}
equal() {
	saves | norm | cmp -s "$TMP/want" -
}
assert_equal() {
	equal || fail "$1: the tables are not the plan: $(saves | norm | diff -u "$TMP/want" - | head -20)"
}
once() {
	"$SVCNAT" --once --backend=nft -v --config "$CFG" "${SETTINGS[@]}" </dev/null >"$TMP/once.log" 2>&1 ||
		fail "--once: $(cat "$TMP/once.log")"
}
handles() {
	nft -a list ruleset 2>/dev/null >"$TMP/handles.$1"
}
same_handles() {
	handles after
	cmp -s "$TMP/handles.before" "$TMP/handles.after" ||
		fail "$1 rewrote rules: $(diff -u "$TMP/handles.before" "$TMP/handles.after" | head -20)"
}
TRUSTED='nft: the tables are as the previous run left them'
keepfile() {
	ls "$TMP/run"/nft-*.keep 2>/dev/null
}

# 1. A first --once writes everything and keeps its state.
once
assert_equal "first --once"
grep -q "$TRUSTED" "$TMP/once.log" && fail "the first --once trusted a file"
f=$(keepfile)
[ -n "$f" ] || fail "no state file in $TMP/run: $(ls -la "$TMP/run" 2>&1)"
[ "$(stat -c %a "$TMP/run")" = 700 ] || fail "$TMP/run is not mode 700"
[ "$(stat -c %a "$f")" = 600 ] || fail "$f is not mode 600"
echo "  first --once: tables = dry-run, state kept in $(basename "$f") (0600, dir 0700)"

# 2. A second --once trusts it: nothing read, nothing written.
handles before
once
grep -q "$TRUSTED" "$TMP/once.log" || fail "the second --once did not trust the file: $(cat "$TMP/once.log")"
grep -q 'rules already up to date: nothing written' "$TMP/once.log" ||
	fail "the second --once wrote: $(cat "$TMP/once.log")"
same_handles "the second --once"
assert_equal "second --once"
echo "  second --once: kept state trusted, nothing written, every handle kept"

# 3. The daemon's first sync trusts it too; after a change it keeps its
# new state at SIGTERM, which the next --once trusts.
cp "$CFG" "$TMP/c.json"
dn_start_nft() {
	: >"$TMP/log"
	"$SVCNAT" --backend=nft --config "$TMP/c.json" "${SETTINGS[@]}" --v=2 \
		--healthz-bind-address '' --metrics-bind-address '' </dev/null >>"$TMP/log" 2>&1 &
	DAEMON=$!
}
syncs() {
	[ "$(grep -c 'sync (' "$TMP/log")" -ge "$1" ]
}
moved() {
	iptables-nft-save 2>/dev/null | grep -q -- '--dport 30181 '
}
dn_start_nft
wait_for 60 "the daemon's first sync" syncs 1
grep -q "$TRUSTED" "$TMP/log" || fail "the daemon's first sync did not trust the file"
same_handles "the daemon's first sync"
sed 's/30180/30181/' "$CFG" >"$TMP/c.tmp" && mv "$TMP/c.tmp" "$TMP/c.json"
wait_for 30 "the daemon's sync of the moved node port" moved
kill -TERM "$DAEMON"
wait "$DAEMON" || fail "the daemon did not exit cleanly: $(tail -5 "$TMP/log")"
DAEMON=
handles before
"$SVCNAT" --once --backend=nft -v --config "$TMP/c.json" "${SETTINGS[@]}" </dev/null >"$TMP/once.log" 2>&1 ||
	fail "--once: $(cat "$TMP/once.log")"
grep -q "$TRUSTED" "$TMP/once.log" || fail "--once did not trust the daemon's state: $(cat "$TMP/once.log")"
grep -q 'rules already up to date: nothing written' "$TMP/once.log" ||
	fail "--once after the daemon wrote: $(cat "$TMP/once.log")"
same_handles "--once after the daemon"
echo "  daemon: first sync trusted the kept state, nothing written; its state after a change kept at SIGTERM and trusted"

# Back to the example's rules (trusted, one change written).
once
grep -q "$TRUSTED" "$TMP/once.log" || fail "--once did not trust the state: $(cat "$TMP/once.log")"
assert_equal "back to the example"

# 4. Another writer between stop and start changes one of svcnat's rules
# in each family: the generation moved, the file is not trusted, both are
# repaired.
rule=$(iptables-nft -t nat -S KUBE-SERVICES 2>/dev/null | grep -m1 -- '--dport 80 ')
[ -n "$rule" ] || fail "no --dport 80 rule in KUBE-SERVICES"
# shellcheck disable=SC2046
eval iptables-nft -t nat -R KUBE-SERVICES 1 $(echo "$rule" | sed -e 's/^-A KUBE-SERVICES //' -e 's/--dport 80 /--dport 81 /') ||
	fail "iptables-nft -R"
ip6tables-nft -t nat -D KUBE-SERVICES 1 || fail "ip6tables-nft -D"
equal && fail "the changes did not show"
once
grep -q "$TRUSTED" "$TMP/once.log" && fail "--once trusted the file after another writer's changes"
grep -q 'kept at generation [0-9]*, the ruleset is at' "$TMP/once.log" ||
	fail "--once did not say why it read: $(cat "$TMP/once.log")"
assert_equal "after iptables-nft -R and ip6tables-nft -D"
echo "  iptables-nft -R (one rule changed) and ip6tables-nft -D between runs: not trusted, repaired"

# 5. Another program's own commit, touching nothing of svcnat's: not
# trusted either (any commit moves the generation); nothing to write.
nft add table ip other || fail "nft add table"
handles before
once
grep -q "$TRUSTED" "$TMP/once.log" && fail "--once trusted the file after another program's commit"
grep -q 'rules already up to date: nothing written' "$TMP/once.log" ||
	fail "--once wrote after an unrelated commit: $(cat "$TMP/once.log")"
same_handles "--once after an unrelated commit"
echo "  another program's commit: not trusted, read, nothing written"

# 6. A damaged file: one warning naming it, a normal sync.
f=$(keepfile)
printf 'x' | dd of="$f" bs=1 seek=200 conv=notrunc 2>/dev/null
iptables-nft -t nat -F KUBE-SERVICES 2>/dev/null || fail "iptables-nft -F"
once
[ "$(grep -c "$f: the state kept by the previous run is ignored" "$TMP/once.log")" = 1 ] ||
	fail "no single warning for the damaged file: $(cat "$TMP/once.log")"
assert_equal "after a damaged file"
echo "  damaged file: one warning naming it, read and repaired"

# 7. A runtime directory others may write to is not used.
rm -f "$TMP/run"/*
chmod 777 "$TMP/run"
once
[ -z "$(keepfile)" ] || fail "state kept in a directory writable by others"
assert_equal "with an unsafe directory"
echo "  directory writable by others: nothing kept there"
echo PASS
