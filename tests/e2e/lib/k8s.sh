# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# Small Kubernetes config writers for the real-traffic tests: the objects
# are written as `kubectl get services,endpointslices -A -o json` prints
# them, which is what svcnat --config reads.
#
#   k8s_service NS NAME SPEC [STATUS]
#       a v1 Service; SPEC (and STATUS) are the JSON members of spec (status)
#       without the braces, e.g. '"clusterIP":"198.19.0.10","ports":[...]'
#   k8s_slice NS SERVICE PORTS ENDPOINT...
#       a discovery.k8s.io/v1 EndpointSlice; PORTS is the JSON ports array;
#       each ENDPOINT is IP@NODE (ready) or IP@NODE@terminating, or
#       IP@NODE@STATE@ZONES@NODES with topology hints: ZONES (hints.forZones)
#       and NODES (hints.forNodes) '+'-separated, empty for none; STATE is
#       ready (or empty), terminating, or notready; with K8S_TRIGGER_TIME set,
#       its endpoints.kubernetes.io/last-change-trigger-time annotation
#   k8s_list ITEM...
#       a v1 List of the items

k8s_service() {
	local ns=$1 name=$2 spec=$3 status=${4:-}
	printf '{"apiVersion":"v1","kind":"Service","metadata":{"namespace":"%s","name":"%s"},"spec":{%s},"status":{%s}}' \
		"$ns" "$name" "$spec" "$status"
}

k8s_slice() {
	local ns=$1 svc=$2 ports=$3 ep ip node state zones nodes hints sep= eps=
	shift 3
	for ep in "$@"; do
		IFS=@ read -r ip node state zones nodes <<<"$ep"
		case $state in
		terminating) state='"ready":false,"serving":true,"terminating":true' ;;
		notready) state='"ready":false,"serving":false,"terminating":false' ;;
		*) state='"ready":true,"serving":true,"terminating":false' ;;
		esac
		hints=
		if [ -n "$zones$nodes" ]; then
			hints=',"hints":{"forZones":['$(_k8s_names "$zones")'],"forNodes":['$(_k8s_names "$nodes")']}'
		fi
		eps="$eps$sep$(printf '{"addresses":["%s"],"conditions":{%s},"nodeName":"%s"%s}' "$ip" "$state" "$node" "$hints")"
		sep=,
	done
	# An IPv6 slice (k8s_slice6) is named "-e2e6" beside the IPv4 one.
	# K8S_TRIGGER_TIME: the EndpointSlice controller's trigger-time annotation.
	local ann=
	[ -n "${K8S_TRIGGER_TIME:-}" ] &&
		ann=',"annotations":{"endpoints.kubernetes.io/last-change-trigger-time":"'$K8S_TRIGGER_TIME'"}'
	printf '{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"namespace":"%s","name":"%s-e2e%s","labels":{"kubernetes.io/service-name":"%s"}%s},"addressType":"%s","endpoints":[%s],"ports":%s}' \
		"$ns" "$svc" "${K8S_SLICE_SUFFIX:-}" "$svc" "$ann" "${K8S_ADDRESS_TYPE:-IPv4}" "$eps" "$ports"
}

# _k8s_names A+B: {"name":"A"},{"name":"B"} (nothing for "")
_k8s_names() {
	local n sep=
	local -a v
	IFS=+ read -r -a v <<<"$1"
	for n in "${v[@]}"; do
		printf '%s{"name":"%s"}' "$sep" "$n"
		sep=,
	done
}

# k8s_slice6 NS SVC PORTS IP@NODE...: the same with addressType IPv6.
k8s_slice6() {
	K8S_ADDRESS_TYPE=IPv6 K8S_SLICE_SUFFIX=6 k8s_slice "$@"
}

k8s_list() {
	local item sep=
	printf '{"apiVersion":"v1","kind":"List","items":['
	for item in "$@"; do
		printf '%s\n%s' "$sep" "$item"
		sep=,
	done
	printf '\n]}\n'
}
