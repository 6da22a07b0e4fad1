# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=sh
#
# iptables-save text as the e2e tests compare it (POSIX sh; sourced by
# restore-test.sh and backend-common.sh):
#
#   save_normalise    stdin to stdout without "#" lines and counters, the
#                     statistic probability as the kernel's u32 (the
#                     dry-run's 10 digits and the save tools' 11 compare
#                     equal: both round(p * 2^31))
#   dry_part 4|6 FILE a dry-run's iptables (4) or ip6tables (6) part: a
#                     "*filter" after a "*nat" starts the second (empty
#                     when the dry-run has none)

save_normalise() {
	awk '
	/^#/ { next }
	{
		sub(/^\[[0-9]+:[0-9]+\] /, "")
		if ($0 ~ /^:/)
			sub(/\[[0-9]+:[0-9]+\]$/, "[0:0]")
		out = ""
		s = $0
		while (match(s, /--probability [0-9.]+/)) {
			v = substr(s, RSTART + 14, RLENGTH - 14) + 0
			out = out substr(s, 1, RSTART - 1) \
				sprintf("--probability ~%.0f/2^31", v * 2147483648)
			s = substr(s, RSTART + RLENGTH)
		}
		print out s
	}'
}

dry_part() {
	awk -v want="$1" '/^\*nat$/ { n = 1 } /^\*filter$/ && n { six = 1 } (want == 6) == (six == 1)' "$2"
}
