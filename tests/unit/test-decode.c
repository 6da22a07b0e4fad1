/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests: JSON decoding (sources/decode.c) and the file source. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "core/diag.h"
#include "core/model.h"
#include "sources/decode/decode.h"
#include "sources/decode/decodecache.h"
#include "sources/file/file.h"
#include "util.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif

/* ---- helpers ---- */

/* Decode json from an exact-size heap copy (no NUL), so ASan sees any
 * read past the end. */
static int run_len(const char *json, size_t len, struct decoded *d, struct diag_list *dl)
{
	char *buf = malloc(len ? len : 1);
	int r;

	assert_non_null(buf);
	memcpy(buf, json, len);
	r = decode_buffer(buf, len, "t.json", d, dl);
	free(buf);
	return r;
}

static int run(const char *json, struct decoded *d, struct diag_list *dl)
{
	return run_len(json, strlen(json), d, dl);
}

/* All diags as "level: line\n" text. */
static char *diag_text(const struct diag_list *l)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	diag_list_print(l, f);
	fclose(f);
	return out;
}

static void assert_diags(const struct diag_list *l, const char *expected)
{
	_cleanup_free_ char *t = diag_text(l);

	if (!streq(t, expected)) {
		print_error("diags:\n%sexpected:\n%s", t, expected);
		fail();
	}
}

static const char *fmt_ip(const struct ipaddr *a)
{
	static char buf[4][INET6_ADDRSTRLEN];
	static int k;

	k = (k + 1) % 4;
	return ipaddr_fmt(a, buf[k], sizeof(buf[k]));
}

static const struct epslice *find_slice(const struct decoded *d, const char *name)
{
	size_t i;

	for (i = 0; i < d->n_slices; i++)
		if (streq(d->slices[i]->name, name))
			return d->slices[i];
	return NULL;
}

static const struct service *find_service(const struct decoded *d, const char *ns,
					  const char *name)
{
	size_t i;

	for (i = 0; i < d->n_services; i++)
		if (streq(d->services[i]->ns, ns) && streq(d->services[i]->name, name))
			return d->services[i];
	return NULL;
}

#define SVC_META "\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\"}"
#define SVC(spec) "{" SVC_META ",\"spec\":{" spec "}}"
#define SVCX(rest) "{" SVC_META "," rest "}"
#define PORT80 "\"ports\":[{\"port\":80}]"
#define SLICE_META(labels)                                                                      \
	"\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{"     \
	"\"name\":\"web-abc\",\"namespace\":\"shop\",\"labels\":{" labels "}}"
#define SLICE(rest)                                                                             \
	"{" SLICE_META("\"kubernetes.io/service-name\":\"web\"") ",\"addressType\":\"IPv4\"," rest "}"
#define EPS(rest)                                                                               \
	"{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"inv\","         \
	"\"namespace\":\"shop\"}," rest "}"
#define LEGACY(entry) "{\"Services\":[" entry "]}"

/* ---- rejected objects: one exact diag each, the object skipped ---- */

struct bad_case {
	const char *json;
	const char *diag; /* the whole diag output */
};

static const struct bad_case bad_objects[] = {
	/* Service: ports */
	{ SVC("\"ports\":[{\"name\":\"a\",\"port\":80},{\"name\":\"b\",\"port\":70000}]"),
	  "error: t.json: shop/web: spec.ports[1].port: 70000 is not a valid port\n" },
	{ SVC("\"ports\":[{\"port\":0}]"), "error: t.json: shop/web: spec.ports[0].port: 0 is not a valid port\n" },
	{ SVC("\"ports\":[{\"port\":-1}]"), "error: t.json: shop/web: spec.ports[0].port: -1 is not a valid port\n" },
	{ SVC("\"ports\":[{\"port\":80.5}]"), "error: t.json: shop/web: spec.ports[0].port: 80.5 is not a valid port\n" },
	{ SVC("\"ports\":[{\"port\":1e300}]"), "error: t.json: shop/web: spec.ports[0].port: 1e+300 is not a valid port\n" },
	{ SVC("\"ports\":[{\"port\":99999999999999999999}]"),
	  "error: t.json: shop/web: spec.ports[0].port: 1e+20 is not a valid port\n" },
	{ SVC("\"ports\":[{\"port\":\"80\"}]"),
	  "error: t.json: shop/web: spec.ports[0].port: expected a number, got \"80\"\n" },
	{ SVC("\"ports\":[{\"port\":true}]"),
	  "error: t.json: shop/web: spec.ports[0].port: expected a number, got true\n" },
	{ SVC("\"ports\":[{\"name\":\"http\"}]"), "error: t.json: shop/web: spec.ports[0].port: missing\n" },
	{ SVC("\"ports\":[{\"port\":80,\"protocol\":\"tcp\"}]"),
	  "error: t.json: shop/web: spec.ports[0].protocol: \"tcp\" is not a valid protocol (TCP, UDP, SCTP)\n" },
	{ SVC("\"ports\":[{\"port\":80,\"protocol\":6}]"),
	  "error: t.json: shop/web: spec.ports[0].protocol: expected a string, got 6\n" },
	{ SVC("\"type\":\"NodePort\",\"ports\":[{\"port\":80,\"nodePort\":70000}]"),
	  "error: t.json: shop/web: spec.ports[0].nodePort: 70000 is not a valid node port\n" },
	{ SVC("\"type\":\"NodePort\",\"ports\":[{\"port\":80,\"nodePort\":-5}]"),
	  "error: t.json: shop/web: spec.ports[0].nodePort: -5 is not a valid node port\n" },
	{ SVC("\"ports\":[{\"name\":\"http\",\"port\":80},{\"name\":\"http\",\"port\":81}]"),
	  "error: t.json: shop/web: spec.ports[1].name: duplicate port name \"http\" for tcp (also spec.ports[0])\n" },
	{ SVC("\"ports\":[{\"name\":\"a\",\"port\":80},{\"name\":\"b\",\"port\":81},{\"name\":\"c\",\"port\":80}]"),
	  "error: t.json: shop/web: spec.ports[2].port: duplicate port 80/tcp (also spec.ports[0])\n" },
	{ SVC("\"ports\":[{\"port\":80,\"targetPort\":\"8080\"}]"),
	  "error: t.json: shop/web: spec.ports[0].targetPort: \"8080\" is not a valid port name\n" },
	{ SVC("\"ports\":[{\"port\":80,\"targetPort\":70000}]"),
	  "error: t.json: shop/web: spec.ports[0].targetPort: 70000 is not a valid port\n" },
	{ SVC("\"ports\":[{\"port\":80,\"targetPort\":true}]"),
	  "error: t.json: shop/web: spec.ports[0].targetPort: expected a number or a string, got true\n" },
	{ SVC("\"ports\":[{\"port\":80,\"name\":\"HTTP\"}]"),
	  "error: t.json: shop/web: spec.ports[0].name: \"HTTP\" is not a valid port name\n" },
	{ SVC("\"ports\":[{\"port\":80,\"name\":[]}]"),
	  "error: t.json: shop/web: spec.ports[0].name: expected a string, got an array\n" },
	{ SVC("\"ports\":[80]"), "error: t.json: shop/web: spec.ports[0]: expected an object, got 80\n" },
	{ SVC("\"ports\":{\"port\":80}"), "error: t.json: shop/web: spec.ports: expected an array, got an object\n" },
	/* Service: addresses */
	{ SVC("\"clusterIP\":\"1.2.3\"," PORT80),
	  "error: t.json: shop/web: spec.clusterIP: \"1.2.3\" is not a valid IP address\n" },
	{ SVC("\"clusterIP\":198," PORT80), "error: t.json: shop/web: spec.clusterIP: expected a string, got 198\n" },
	{ SVC("\"clusterIP\":\"198.19.0.1\",\"clusterIPs\":[\"198.19.0.2\"]," PORT80),
	  "error: t.json: shop/web: spec.clusterIPs[0]: \"198.19.0.2\" does not match spec.clusterIP \"198.19.0.1\"\n" },
	{ SVC("\"clusterIPs\":[\"198.19.0.1\",\"fd00::1\",\"fd00::2\"]," PORT80),
	  "error: t.json: shop/web: spec.clusterIPs: more than 2 entries\n" },
	{ SVC("\"clusterIPs\":[\"198.19.0.1\",\"198.19.0.2\"]," PORT80),
	  "error: t.json: shop/web: spec.clusterIPs[1]: a second cluster IP of the same family\n" },
	{ SVC("\"clusterIPs\":[\"None\",\"198.19.0.2\"]," PORT80),
	  "error: t.json: shop/web: spec.clusterIPs[0]: \"None\" must be the only entry\n" },
	{ SVC("\"clusterIP\":\"198.19.0.1\",\"clusterIPs\":[\"None\"]," PORT80),
	  "error: t.json: shop/web: spec.clusterIPs[0]: \"None\" does not match spec.clusterIP \"198.19.0.1\"\n" },
	{ SVC("\"clusterIPs\":[1]," PORT80), "error: t.json: shop/web: spec.clusterIPs[0]: expected a string, got 1\n" },
	{ SVC("\"externalIPs\":[\"198.18.200.1\",\"x\"]," PORT80),
	  "error: t.json: shop/web: spec.externalIPs[1]: \"x\" is not a valid IP address\n" },
	{ SVC("\"externalIPs\":\"198.18.200.1\"," PORT80),
	  "error: t.json: shop/web: spec.externalIPs: expected an array, got \"198.18.200.1\"\n" },
	{ SVC("\"loadBalancerSourceRanges\":[\"198.18.1.0/33\"]," PORT80),
	  "error: t.json: shop/web: spec.loadBalancerSourceRanges[0]: \"198.18.1.0/33\" is not a valid CIDR\n" },
	{ SVC("\"loadBalancerSourceRanges\":[\"\"]," PORT80),
	  "error: t.json: shop/web: spec.loadBalancerSourceRanges[0]: \"\" is not a valid CIDR\n" },
	{ SVC("\"loadBalancerSourceRanges\":[{}]," PORT80),
	  "error: t.json: shop/web: spec.loadBalancerSourceRanges[0]: expected a string, got an object\n" },
	/* Service: affinity, policies, type */
	{ SVC("\"sessionAffinity\":\"Sticky\"," PORT80),
	  "error: t.json: shop/web: spec.sessionAffinity: \"Sticky\" is not a valid session affinity (None, ClientIP)\n" },
	{ SVC("\"sessionAffinity\":\"ClientIP\",\"sessionAffinityConfig\":{\"clientIP\":{\"timeoutSeconds\":0}}," PORT80),
	  "error: t.json: shop/web: spec.sessionAffinityConfig.clientIP.timeoutSeconds: 0 is not a valid timeout (1-86400 seconds)\n" },
	{ SVC("\"sessionAffinity\":\"ClientIP\",\"sessionAffinityConfig\":{\"clientIP\":{\"timeoutSeconds\":86401}}," PORT80),
	  "error: t.json: shop/web: spec.sessionAffinityConfig.clientIP.timeoutSeconds: 86401 is not a valid timeout (1-86400 seconds)\n" },
	{ SVC("\"sessionAffinity\":\"ClientIP\",\"sessionAffinityConfig\":{\"clientIP\":{\"timeoutSeconds\":\"60\"}}," PORT80),
	  "error: t.json: shop/web: spec.sessionAffinityConfig.clientIP.timeoutSeconds: expected a number, got \"60\"\n" },
	{ SVC("\"sessionAffinity\":\"ClientIP\",\"sessionAffinityConfig\":\"x\"," PORT80),
	  "error: t.json: shop/web: spec.sessionAffinityConfig: expected an object, got \"x\"\n" },
	{ SVC("\"sessionAffinity\":\"ClientIP\",\"sessionAffinityConfig\":{\"clientIP\":[]}," PORT80),
	  "error: t.json: shop/web: spec.sessionAffinityConfig.clientIP: expected an object, got an array\n" },
	{ SVC("\"externalTrafficPolicy\":\"local\"," PORT80),
	  "error: t.json: shop/web: spec.externalTrafficPolicy: \"local\" is not a valid policy (Cluster, Local)\n" },
	{ SVC("\"internalTrafficPolicy\":\"Global\"," PORT80),
	  "error: t.json: shop/web: spec.internalTrafficPolicy: \"Global\" is not a valid policy (Cluster, Local)\n" },
	{ SVC("\"internalTrafficPolicy\":false," PORT80),
	  "error: t.json: shop/web: spec.internalTrafficPolicy: expected a string, got false\n" },
	{ SVC("\"healthCheckNodePort\":65536," PORT80),
	  "error: t.json: shop/web: spec.healthCheckNodePort: 65536 is not a valid node port\n" },
	{ SVC("\"type\":\"Foo\"," PORT80),
	  "error: t.json: shop/web: spec.type: \"Foo\" is not a valid service type (ClusterIP, NodePort, LoadBalancer, ExternalName)\n" },
	{ SVC("\"type\":\"nodeport\"," PORT80),
	  "error: t.json: shop/web: spec.type: \"nodeport\" is not a valid service type (ClusterIP, NodePort, LoadBalancer, ExternalName)\n" },
	{ SVCX("\"spec\":[]"), "error: t.json: shop/web: spec: expected an object, got an array\n" },
	/* Service: status */
	{ SVCX("\"spec\":{" PORT80 "},\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"bad\"}]}}"),
	  "error: t.json: shop/web: status.loadBalancer.ingress[0].ip: \"bad\" is not a valid IP address\n" },
	{ SVCX("\"spec\":{" PORT80 "},\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"198.18.200.1\",\"ipMode\":\"Magic\"}]}}"),
	  "error: t.json: shop/web: status.loadBalancer.ingress[0].ipMode: \"Magic\" is not a valid ipMode (VIP, Proxy)\n" },
	{ SVCX("\"spec\":{" PORT80 "},\"status\":{\"loadBalancer\":{\"ingress\":{}}}"),
	  "error: t.json: shop/web: status.loadBalancer.ingress: expected an array, got an object\n" },
	{ SVCX("\"spec\":{" PORT80 "},\"status\":7"), "error: t.json: shop/web: status: expected an object, got 7\n" },
	/* Service: metadata */
	{ "{\"kind\":\"Service\",\"metadata\":{\"namespace\":\"shop\"},\"spec\":{" PORT80 "}}",
	  "error: t.json: Service: metadata.name: missing\n" },
	{ "{\"kind\":\"Service\",\"spec\":{" PORT80 "}}", "error: t.json: Service: metadata.name: missing\n" },
	{ "{\"kind\":\"Service\",\"metadata\":{\"name\":\"Web\"}}",
	  "error: t.json: Service: metadata.name: \"Web\" is not a valid service name\n" },
	{ "{\"kind\":\"Service\",\"metadata\":{\"name\":\"1web\"}}",
	  "error: t.json: Service: metadata.name: \"1web\" is not a valid service name\n" },
	{ "{\"kind\":\"Service\",\"metadata\":{\"name\":\"web\\\"\\n-A X\"}}",
	  "error: t.json: Service: metadata.name: \"web\\\"\\x0a-A X\" is not a valid service name\n" },
	{ "{\"kind\":\"Service\",\"metadata\":{\"name\":\"web\",\"namespace\":\"Shop\"}}",
	  "error: t.json: Service: metadata.namespace: \"Shop\" is not a valid namespace\n" },
	{ "{\"kind\":\"Service\",\"metadata\":{\"name\":5}}",
	  "error: t.json: Service: metadata.name: expected a string, got 5\n" },
	{ "{\"kind\":\"Service\",\"metadata\":\"x\"}", "error: t.json: Service: metadata: expected an object, got \"x\"\n" },
	{ "{\"kind\":\"Service\",\"metadata\":{\"name\":\"web\",\"labels\":[]}}",
	  "error: t.json: Service: metadata.labels: expected an object, got an array\n" },
	{ "{\"kind\":\"Service\",\"metadata\":{\"name\":\"web\",\"labels\":{\"service.kubernetes.io/service-proxy-name\":1}}}",
	  "error: t.json: default/web: metadata.labels[\"service.kubernetes.io/service-proxy-name\"]: expected a string, got 1\n" },
	{ "{\"kind\":\"Service\",\"metadata\":{\"name\":\"web\",\"labels\":{\"service.kubernetes.io/headless\":\"a b\"}}}",
	  "error: t.json: default/web: metadata.labels[\"service.kubernetes.io/headless\"]: \"a b\" is not a valid label value\n" },
	/* EndpointSlice */
	{ "{" SLICE_META("\"app\":\"web\"") ",\"addressType\":\"IPv4\"}",
	  "error: t.json: EndpointSlice shop/web-abc: metadata.labels: no kubernetes.io/service-name label: the slice belongs to no service\n" },
	{ "{\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"web-abc\"},\"addressType\":\"IPv4\"}",
	  "error: t.json: EndpointSlice default/web-abc: metadata.labels: no kubernetes.io/service-name label: the slice belongs to no service\n" },
	{ "{" SLICE_META("\"kubernetes.io/service-name\":\"Web\"") ",\"addressType\":\"IPv4\"}",
	  "error: t.json: EndpointSlice shop/web-abc: metadata.labels[\"kubernetes.io/service-name\"]: \"Web\" is not a valid service name\n" },
	{ "{" SLICE_META("\"kubernetes.io/service-name\":\"web\"") "}",
	  "error: t.json: EndpointSlice shop/web-abc: addressType: missing\n" },
	{ "{" SLICE_META("\"kubernetes.io/service-name\":\"web\"") ",\"addressType\":\"IPv5\"}",
	  "error: t.json: EndpointSlice shop/web-abc: addressType: \"IPv5\" is not a valid addressType (IPv4, IPv6, FQDN)\n" },
	{ "{\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"web_abc\"}}",
	  "error: t.json: EndpointSlice: metadata.name: \"web_abc\" is not a valid EndpointSlice name\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"]},{\"addresses\":[\"1.2.3.999\"]}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[1].addresses[0]: \"1.2.3.999\" is not a valid IP address\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"fd00::1\"]}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].addresses[0]: fd00::1 does not match addressType IPv4\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[]}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].addresses: missing (at least one address is required)\n" },
	{ SLICE("\"endpoints\":[{}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].addresses: missing (at least one address is required)\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":\"198.18.65.1\"}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].addresses: expected an array, got \"198.18.65.1\"\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],\"conditions\":{\"ready\":\"yes\"}}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].conditions.ready: expected true or false, got \"yes\"\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],\"conditions\":{\"serving\":1}}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].conditions.serving: expected true or false, got 1\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],\"conditions\":{\"terminating\":\"false\"}}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].conditions.terminating: expected true or false, got \"false\"\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],\"conditions\":[]}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].conditions: expected an object, got an array\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],\"nodeName\":\"Node_A\"}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].nodeName: \"Node_A\" is not a valid node name\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],\"zone\":\"zone a\"}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].zone: \"zone a\" is not a valid zone\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],\"hints\":{\"forZones\":[\"zone-a\"]}}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].hints.forZones[0]: expected an object, got \"zone-a\"\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],\"hints\":{\"forZones\":[{\"name\":3}]}}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].hints.forZones[0].name: expected a string, got 3\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],\"hints\":{\"forNodes\":[\"node-a\"]}}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].hints.forNodes[0]: expected an object, got \"node-a\"\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],\"hints\":{\"forNodes\":[{\"name\":\"Node_A\"}]}}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].hints.forNodes[0].name: \"Node_A\" is not a valid node name\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],\"hints\":{\"forNodes\":[{}]}}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].hints.forNodes[0].name: missing (a node name is required)\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],\"hints\":{\"forNodes\":{}}}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].hints.forNodes: expected an array, got an object\n" },
	{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],\"hints\":true}]"),
	  "error: t.json: EndpointSlice shop/web-abc: endpoints[0].hints: expected an object, got true\n" },
	{ SLICE("\"ports\":[{\"port\":0}]"),
	  "error: t.json: EndpointSlice shop/web-abc: ports[0].port: 0 is not a valid port\n" },
	{ SLICE("\"ports\":[{\"name\":\"http\",\"port\":80},{\"name\":\"http\",\"port\":81}]"),
	  "error: t.json: EndpointSlice shop/web-abc: ports[1].name: duplicate port name \"http\"\n" },
	{ SLICE("\"ports\":[{\"port\":80,\"protocol\":\"ICMP\"}]"),
	  "error: t.json: EndpointSlice shop/web-abc: ports[0].protocol: \"ICMP\" is not a valid protocol (TCP, UDP, SCTP)\n" },
	{ SLICE("\"ports\":[{\"port\":80,\"name\":\"-x\"}]"),
	  "error: t.json: EndpointSlice shop/web-abc: ports[0].name: \"-x\" is not a valid port name\n" },
	{ SLICE("\"ports\":\"80\""), "error: t.json: EndpointSlice shop/web-abc: ports: expected an array, got \"80\"\n" },
	{ SLICE("\"endpoints\":{}"), "error: t.json: EndpointSlice shop/web-abc: endpoints: expected an array, got an object\n" },
	/* Endpoints (v1) */
	{ EPS("\"subsets\":[{\"addresses\":[{\"ip\":\"x\"}]}]"),
	  "error: t.json: Endpoints shop/inv: subsets[0].addresses[0].ip: \"x\" is not a valid IP address\n" },
	{ EPS("\"subsets\":[{\"addresses\":[{\"nodeName\":\"node-a\"}]}]"),
	  "error: t.json: Endpoints shop/inv: subsets[0].addresses[0].ip: missing\n" },
	{ EPS("\"subsets\":[{\"addresses\":[\"198.18.65.1\"]}]"),
	  "error: t.json: Endpoints shop/inv: subsets[0].addresses[0]: expected an object, got \"198.18.65.1\"\n" },
	{ EPS("\"subsets\":[{\"ports\":[{\"port\":70000}]}]"),
	  "error: t.json: Endpoints shop/inv: subsets[0].ports[0].port: 70000 is not a valid port\n" },
	{ EPS("\"subsets\":[{\"ports\":[{\"name\":\"a\"}]}]"),
	  "error: t.json: Endpoints shop/inv: subsets[0].ports[0].port: missing\n" },
	{ EPS("\"subsets\":[{\"ports\":[{\"name\":\"a\",\"port\":1},{\"name\":\"a\",\"port\":2}]}]"),
	  "error: t.json: Endpoints shop/inv: subsets[0].ports[1].name: duplicate port name \"a\"\n" },
	{ EPS("\"subsets\":[{},{\"notReadyAddresses\":{}}]"),
	  "error: t.json: Endpoints shop/inv: subsets[1].notReadyAddresses: expected an array, got an object\n" },
	{ EPS("\"subsets\":[{\"addresses\":[{\"ip\":\"198.18.65.1\",\"nodeName\":\"A\"}]}]"),
	  "error: t.json: Endpoints shop/inv: subsets[0].addresses[0].nodeName: \"A\" is not a valid node name\n" },
	{ EPS("\"subsets\":{}"), "error: t.json: Endpoints shop/inv: subsets: expected an array, got an object\n" },
	/* the original format */
	{ LEGACY("{\"Name\":\"nodejs\",\"Port\":70000}"), "error: t.json: default/nodejs: Port: 70000 is not a valid port\n" },
	{ LEGACY("{\"Name\":\"nodejs\",\"Port\":\"80\"}"),
	  "error: t.json: default/nodejs: Port: expected a number, got \"80\"\n" },
	{ LEGACY("{\"Name\":\"nodejs\"}"), "error: t.json: default/nodejs: Port: missing\n" },
	{ LEGACY("{\"Name\":\"nodejs\",\"Port\":80,\"Endpoints\":[\"1.2.3.4\"]}"),
	  "error: t.json: default/nodejs: Endpoints[0]: \"1.2.3.4\" is not a valid \"ip:port\"\n" },
	{ LEGACY("{\"Name\":\"nodejs\",\"Port\":80,\"Endpoints\":[\"198.18.65.1:80\",\"1.2.3.4:0\"]}"),
	  "error: t.json: default/nodejs: Endpoints[1]: \"1.2.3.4:0\" is not a valid \"ip:port\"\n" },
	{ LEGACY("{\"Name\":\"nodejs\",\"Port\":80,\"Endpoints\":[\"1.2.3.4:65536\"]}"),
	  "error: t.json: default/nodejs: Endpoints[0]: \"1.2.3.4:65536\" is not a valid \"ip:port\"\n" },
	{ LEGACY("{\"Name\":\"nodejs\",\"Port\":80,\"Endpoints\":[\"fd00::1:80\"]}"),
	  "error: t.json: default/nodejs: Endpoints[0]: \"fd00::1:80\" is not a valid \"ip:port\"\n" },
	{ LEGACY("{\"Name\":\"nodejs\",\"Port\":80,\"Endpoints\":[80]}"),
	  "error: t.json: default/nodejs: Endpoints[0]: expected a string, got 80\n" },
	{ LEGACY("{\"Name\":\"nodejs\",\"Port\":80,\"Endpoints\":\"1.2.3.4:80\"}"),
	  "error: t.json: default/nodejs: Endpoints: expected an array, got \"1.2.3.4:80\"\n" },
	{ LEGACY("{\"Port\":80}"), "error: t.json: object Services[0]: Name: missing\n" },
	{ LEGACY("{\"Name\":\"a b\",\"Port\":80}"), "error: t.json: object Services[0]: Name: \"a b\" is not a valid name\n" },
	{ LEGACY("{\"Name\":\"nodejs\",\"Port\":80,\"Protocol\":\"ICMP\"}"),
	  "error: t.json: default/nodejs: Protocol: \"ICMP\" is not a valid protocol (TCP, UDP)\n" },
	{ LEGACY("5"), "error: t.json: object Services[0]: expected an object, got 5\n" },
};

static void test_bad_objects(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad_objects); i++) {
		struct decoded d = { 0 };
		struct diag_list dl;

		diag_list_init(&dl);
		print_message("case %zu: %s\n", i, bad_objects[i].json);
		assert_int_equal(run(bad_objects[i].json, &d, &dl), 0);
		assert_int_equal(d.n_services, 0);
		assert_int_equal(diag_count(&dl, DIAG_ERROR), 1);
		assert_diags(&dl, bad_objects[i].diag);
		decoded_done(&d);
		diag_list_done(&dl);
	}
}

/*
 * Every port field at its bounds: 0, 1, 65535, 65536.  A port is 1-65535
 * (a 65536 truncated to uint16_t would be 0: no --dport at all); nodePort
 * and targetPort also take 0 (unset).
 */
static void test_port_bounds(void **state)
{
	static const struct {
		const char *fmt;  /* one %u */
		const char *field;
		unsigned min;     /* 0 or 1 */
	} fields[] = {
		{ SVC("\"ports\":[{\"port\":%u}]"), "svc.port", 1 },
		{ SVC("\"type\":\"NodePort\",\"ports\":[{\"port\":80,\"nodePort\":%u}]"), "svc.nodePort", 0 },
		{ SVC("\"ports\":[{\"port\":80,\"targetPort\":%u}]"), "svc.targetPort", 0 },
		{ SVC("\"type\":\"LoadBalancer\",\"externalTrafficPolicy\":\"Local\","
		      "\"healthCheckNodePort\":%u," PORT80), "svc.healthCheckNodePort", 0 },
		{ SLICE("\"ports\":[{\"name\":\"\",\"port\":%u}]"), "slice.port", 1 },
		{ EPS("\"subsets\":[{\"addresses\":[{\"ip\":\"198.18.65.1\"}],\"ports\":[{\"port\":%u}]}]"),
		  "endpoints.port", 1 },
		{ LEGACY("{\"Name\":\"nodejs\",\"Port\":%u}"), "legacy.Port", 1 },
	};
	static const unsigned values[] = { 0, 1, 65535, 65536 };
	size_t f, v;

	for (f = 0; f < ARRAY_SIZE(fields); f++) {
		for (v = 0; v < ARRAY_SIZE(values); v++) {
			unsigned x = values[v];
			bool ok = x >= fields[f].min && x <= 65535;
			struct decoded d = { 0 };
			struct diag_list dl;
			char json[1024];
			unsigned got;

			const char *at = strstr(fields[f].fmt, "%u");

			assert_non_null(at);
			snprintf(json, sizeof(json), "%.*s%u%s", (int)(at - fields[f].fmt),
				 fields[f].fmt, x, at + 2);
			print_message("%s = %u: %s\n", fields[f].field, x, json);
			diag_list_init(&dl);
			assert_int_equal(run(json, &d, &dl), 0);
			assert_int_equal(diag_count(&dl, DIAG_ERROR), ok ? 0 : 1);
			if (!ok) {
				_cleanup_free_ char *t = diag_text(&dl);

				assert_non_null(strstr(t, "is not a valid"));
				assert_int_equal(d.n_services, 0);
				decoded_done(&d);
				diag_list_done(&dl);
				continue;
			}
			if (strncmp(fields[f].field, "svc.", 4) == 0 ||
			    strncmp(fields[f].field, "legacy.", 7) == 0) {
				const struct service *sv = d.services[0];

				assert_int_equal(d.n_services, 1);
				if (streq(fields[f].field, "svc.nodePort"))
					got = sv->ports[0].node_port;
				else if (streq(fields[f].field, "svc.healthCheckNodePort"))
					got = sv->health_check_node_port;
				else if (streq(fields[f].field, "svc.targetPort"))
					got = (unsigned)strtoul(sv->ports[0].target_port, NULL, 10);
				else
					got = sv->ports[0].port;
				/* targetPort 0 is unset: the API server defaults it to port */
				if (streq(fields[f].field, "svc.targetPort") && x == 0)
					assert_int_equal(got, 80);
				else
					assert_int_equal(got, x);
			} else {
				assert_int_equal(d.n_slices, 1);
				assert_int_equal(d.slices[0]->n_ports, 1);
				assert_int_equal(d.slices[0]->ports[0].port, x);
			}
			decoded_done(&d);
			diag_list_done(&dl);
		}
	}
}

/*
 * Issue 17: a NUL in a string, a document of unknown shape, duplicate keys.
 * Each case through run_len() (so raw NUL bytes count), with the services
 * and slices kept and the whole diag output.
 */
static void test_hostile_strings(void **state)
{
#define T(lit) lit, sizeof(lit) - 1
	static const struct {
		const char *json;
		size_t len;
		int r;
		size_t n_services;
		const char *name; /* of the first service */
		const char *diag;
	} cases[] = {
		/* a NUL in a value: the object is rejected, naming the field */
		{ T("{\"kind\":\"List\",\"items\":[{\"kind\":\"Service\",\"metadata\":{\"name\":\"we\\u0000b\","
		    "\"namespace\":\"t\"},\"spec\":{\"ports\":[{\"port\":80}]}}," SVC(PORT80) "]}"), 0, 1, "web",
		  "error: t.json: Service items[0]: metadata.name: contains a NUL character (\\u0000)\n" },
		{ T(SVC("\"clusterIP\":\"198.19.0.10\\u0000junk\"," PORT80)), 0, 0, NULL,
		  "error: t.json: shop/web: spec.clusterIP: contains a NUL character (\\u0000)\n" },
		{ T(SVC("\"ports\":[{\"port\":80,\"targetPort\":\"\\u0000http\"}]")), 0, 0, NULL,
		  "error: t.json: shop/web: spec.ports[0].targetPort: contains a NUL character (\\u0000)\n" },
		{ T(LEGACY("{\"Name\":\"a\\u0000;bad\",\"Port\":80}")), 0, 0, NULL,
		  "error: t.json: object Services[0]: Name: contains a NUL character (\\u0000)\n" },
		{ T(SVC("\"clusterIP\":\"198.19.0.10\0junk\"," PORT80)), 0, 0, NULL,
		  "error: t.json: shop/web: spec.clusterIP: contains a NUL character (\\u0000)\n" },
		/* not a NUL: an escaped backslash, then "u0000"; a field svcnat ignores */
		{ T(SVCX("\"spec\":{" PORT80 ",\"x\":\"\\\\u0000\",\"y\":\"\\u0000\"}")), 0, 1, "web", "" },
		/* a NUL in a key: the whole file (the List would lose its items) */
		{ T("{\"kind\":\"List\",\"it\0ems\":[" SVC(PORT80) "]}"), -EINVAL, 0, NULL,
		  "error: t.json: a key contains a NUL character (\\u0000) at line 1, column 16\n" },
		{ T("{\"kind\":\"List\",\"items\":[{\"kind\":\"Service\",\"meta\\u0000\":{}}]}"), -EINVAL, 0,
		  NULL, "error: t.json: a key contains a NUL character (\\u0000) at line 1, column 43\n" },
		/* unknown shapes are refused whole, so the source keeps its last content */
		{ T("{\"apiVersion\":\"v1\",\"kind\":\"List\"}"), -EINVAL, 0, NULL,
		  "error: t.json: a List without \"items\": refusing it (an empty List is \"items\": [])\n" },
		{ T("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"itemz\":[" SVC(PORT80) "]}"), -EINVAL, 0, NULL,
		  "error: t.json: \"itemz\" is not a key of a List (apiVersion, kind, metadata, items): "
		  "refusing a document of unknown shape\n" },
		{ T("{\"kind\":\"List\",\"items\":[" SVC(PORT80) "],\"extra\":1}"), -EINVAL, 0, NULL,
		  "error: t.json: \"extra\" is not a key of a List (apiVersion, kind, metadata, items): "
		  "refusing a document of unknown shape\n" },
		{ T("{\"kind\":\"ServiceList\",\"metadata\":{},\"items\":[]}"), 0, 0, NULL, "" },
		/* duplicate keys: the last wins, as in Go's decoder and the API server */
		{ T("{\"kind\":\"Service\",\"metadata\":{\"name\":\"a\",\"name\":\"b\"},\"spec\":{" PORT80
		    "}}"), 0, 1, "b", "" },
		{ T("{\"kind\":\"List\",\"items\":[{\"kind\":\"Pod\"}],\"items\":[" SVC(PORT80) "]}"), 0, 1,
		  "web", "" },
		{ T("{\"kind\":\"List\",\"items\":[" SVC(PORT80) "],\"items\":[]}"), 0, 0, NULL, "" },
	};
#undef T
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct decoded d = { 0 };
		struct diag_list dl;

		diag_list_init(&dl);
		print_message("case %zu: %s\n", i, cases[i].json);
		assert_int_equal(run_len(cases[i].json, cases[i].len, &d, &dl), cases[i].r);
		assert_diags(&dl, cases[i].diag);
		assert_int_equal(d.n_services, cases[i].n_services);
		if (cases[i].name)
			assert_string_equal(d.services[0]->name, cases[i].name);
		decoded_done(&d);
		diag_list_done(&dl);
	}
}

/* A rejected object is skipped, the rest applied. */
static void test_skip_bad_keep_rest(void **state)
{
	static const char json[] =
		"{\"kind\":\"List\",\"items\":["
		"{\"kind\":\"Service\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"ports\":[{\"port\":80}]}},"
		"{\"kind\":\"Service\",\"metadata\":{\"name\":\"b\"},\"spec\":{\"ports\":[{\"port\":0}]}},"
		"42,"
		"{\"metadata\":{\"name\":\"d\"}},"
		"{\"kind\":\"Service\",\"metadata\":{\"name\":\"c\"},\"spec\":{\"ports\":[{\"port\":81}]}}]}";
	struct decoded d = { 0 };
	struct diag_list dl;

	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), 0);
	assert_int_equal(d.n_services, 2);
	assert_string_equal(d.services[0]->name, "a");
	assert_string_equal(d.services[1]->name, "c");
	assert_diags(&dl, "error: t.json: default/b: spec.ports[0].port: 0 is not a valid port\n"
			  "error: t.json: object items[2]: expected an object, got 42\n"
			  "warning: t.json: object items[3]: no kind; ignored\n");
	decoded_done(&d);
	diag_list_done(&dl);
}

/*
 * kubectl's List (members in its order: items before kind) is decoded one
 * item at a time, with the same items and diagnostics, in order.
 */
static void test_stream_list(void **state)
{
	static const char json[] =
		"{\"apiVersion\": \"v1\", \"items\": [\n"
		"  {\"kind\":\"Service\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"ports\":[{\"port\":80}]}},\n"
		"  {\"kind\":\"Service\",\"metadata\":{\"name\":\"b\"},\"spec\":{\"ports\":[{\"port\":0}]}},\n"
		"  {\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}},\n"
		"  {\"kind\":\"Service\",\"metadata\":{\"name\":\"c\"},\"spec\":{\"ports\":[{\"port\":70000}]}},\n"
		"  {\"kind\":\"Service\",\"metadata\":{\"name\":\"d\"},\"spec\":{\"ports\":[{\"port\":81}]}}\n"
		" ], \"kind\": \"List\", \"metadata\": {\"resourceVersion\": \"\"}}\n";
	unsigned long before = decode_streamed_lists();
	struct decoded d = { 0 };
	struct diag_list dl;

	(void)state;
	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), 0);
	assert_int_equal(decode_streamed_lists(), before + 1);
	assert_int_equal(d.n_services, 2);
	assert_string_equal(d.services[0]->name, "a");
	assert_string_equal(d.services[1]->name, "d");
	assert_diags(&dl, "error: t.json: default/b: spec.ports[0].port: 0 is not a valid port\n"
			  "error: t.json: default/c: spec.ports[0].port: 70000 is not a valid port\n");
	decoded_done(&d);
	diag_list_done(&dl);
}

/*
 * The items kept between decodes of one file (sources/decodecache.h): an
 * item byte for byte as kept comes out as the same object, undecoded; a
 * changed one is decoded; items that said something are not kept (their
 * errors come again); a failed decode leaves the kept items as they were;
 * the result is always the uncached one's.
 */
static void cached(const char *json, struct decode_cache *cache, struct decoded *d,
		   struct diag_list *dl)
{
	decoded_done(d);
	diag_list_done(dl);
	diag_list_init(dl);
	(void)decode_buffer_cached(json, strlen(json), "t.json", cache, d, dl);
}

static bool diags_say(const struct diag_list *dl, const char *needle)
{
	char *t = diag_text(dl);
	bool r = t && strstr(t, needle);

	free(t);
	return r;
}

static void test_stream_cache(void **state)
{
#define CSVC(n, port) "{\"kind\":\"Service\",\"metadata\":{\"name\":\"" n "\"},\"spec\":{\"ports\":[{\"port\":" port "}]}}"
#define CLIST(...) "{\"kind\":\"List\",\"apiVersion\":\"v1\",\"items\":[" __VA_ARGS__ "]}"
	static const char v1[] = CLIST(CSVC("a", "80") "," CSVC("b", "0") "," CSVC("c", "82"));
	static const char v2[] = CLIST(CSVC("a", "80") "," CSVC("b", "0") "," CSVC("c", "83"));
	static const char v3[] = CLIST(CSVC("a", "80") "," CSVC("a", "80"));
	struct decode_cache *cache;
	struct decoded d = { 0 }, fresh = { 0 };
	struct diag_list dl;
	struct service *a, *c;

	(void)state;
	diag_list_init(&dl);
	assert_int_equal(decode_cache_new(&cache), 0);
	cached(v1, cache, &d, &dl);
	assert_int_equal(decode_cache_hits(cache), 0);
	assert_int_equal(d.n_services, 2);
	assert_diags(&dl, "error: t.json: default/b: spec.ports[0].port: 0 is not a valid port\n");
	a = d.services[0];
	c = d.services[1];
	/* the same text: a and c as they were, b decoded (and named) again */
	cached(v1, cache, &d, &dl);
	assert_int_equal(decode_cache_hits(cache), 2);
	assert_ptr_equal(d.services[0], a);
	assert_ptr_equal(d.services[1], c);
	assert_diags(&dl, "error: t.json: default/b: spec.ports[0].port: 0 is not a valid port\n");
	/* c changed: decoded anew, a kept */
	cached(v2, cache, &d, &dl);
	assert_int_equal(decode_cache_hits(cache), 1);
	assert_ptr_equal(d.services[0], a);
	assert_ptr_not_equal(d.services[1], c);
	assert_int_equal(d.services[1]->ports[0].port, 83);
	assert_int_equal(run(v2, &fresh, &dl), 0);
	assert_true(service_equal(d.services[1], fresh.services[1]));
	decoded_done(&fresh);
	/* a text that fails leaves the kept items alone */
	c = d.services[1];
	cached("{\"kind\":\"List\",\"items\":[" CSVC("a", "80") ",", cache, &d, &dl);
	assert_int_equal(d.n_services, 0);
	cached(v2, cache, &d, &dl);
	assert_int_equal(decode_cache_hits(cache), 2);
	assert_ptr_equal(d.services[1], c);
	/* the same item twice: the second is the duplicate, named each time */
	cached(v3, cache, &d, &dl);
	assert_int_equal(d.n_services, 1);
	assert_true(diags_say(&dl, "defined more than once"));
	cached(v3, cache, &d, &dl);
	assert_int_equal(d.n_services, 1);
	assert_true(diags_say(&dl, "defined more than once"));
	decoded_done(&d);
	diag_list_done(&dl);
	decode_cache_free(cache);
#undef CSVC
#undef CLIST
}

/*
 * What the item-by-item path does not take goes through the whole tree
 * with the result it always had: a syntax error after good items (nothing
 * kept), trailing commas, text after the object, a typed list.
 */
static void test_stream_fallback(void **state)
{
	static const char good[] =
		"{\"kind\":\"Service\",\"metadata\":{\"name\":\"a\"},\"spec\":{\"ports\":[{\"port\":80}]}}";
	char json[512];
	unsigned long before = decode_streamed_lists();
	struct decoded d = { 0 };
	struct diag_list dl;

	(void)state;
	snprintf(json, sizeof(json), "{\"kind\":\"List\",\"items\":[%s,{\"kind\":\"Service\",]}", good);
	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), -EINVAL);
	assert_int_equal(d.n_services, 0);
	assert_non_null(strstr(dl.items[0].msg, "not JSON: syntax error at line 1, column"));
	diag_list_done(&dl);

	snprintf(json, sizeof(json), "{\"kind\":\"List\",\"items\":[%s,]}", good);
	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), -EINVAL);
	assert_int_equal(d.n_services, 0);
	assert_non_null(strstr(dl.items[0].msg, "not JSON"));
	diag_list_done(&dl);

	snprintf(json, sizeof(json), "{\"kind\":\"List\",\"items\":[%s],}", good);
	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), -EINVAL);
	assert_int_equal(d.n_services, 0);
	assert_non_null(strstr(dl.items[0].msg, "not JSON"));
	diag_list_done(&dl);

	snprintf(json, sizeof(json), "{\"kind\":\"List\",\"items\":[%s]} x", good);
	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), -EINVAL);
	assert_int_equal(d.n_services, 0);
	assert_non_null(strstr(dl.items[0].msg, "unexpected text after the value"));
	diag_list_done(&dl);

	/* A typed list's items carry no kind: decoded, through the tree. */
	snprintf(json, sizeof(json),
		 "{\"kind\":\"ServiceList\",\"items\":[{\"metadata\":{\"name\":\"a\"},"
		 "\"spec\":{\"ports\":[{\"port\":80}]}}]}");
	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), 0);
	assert_int_equal(d.n_services, 1);
	assert_int_equal(dl.n, 0);
	diag_list_done(&dl);
	decoded_done(&d);
	assert_int_equal(decode_streamed_lists(), before);
}

/* ---- texts rejected whole ---- */

struct whole_case {
	const char *json;
	int ret;
	const char *diag;
};

static const struct whole_case bad_texts[] = {
	{ "", -EINVAL, "error: t.json: not JSON: no value (empty text) at line 1, column 1\n" },
	{ " \n\t\n ", -EINVAL, "error: t.json: not JSON: no value (empty text) at line 3, column 2\n" },
	{ "{\"kind\": \"List\", \"items\": [", -EINVAL,
	  "error: t.json: not JSON: syntax error at line 1, column 27 near \"[\"\n" },
	{ "{\n  \"kind\": \"List\",\n  \"items\": [\n    {\"kind\": \"Service\",}\n  ]\n}\n", -EINVAL,
	  "error: t.json: not JSON: syntax error at line 4, column 25 near \"\\x0a  ]\\x0a}\\x0a\"\n" },
	{ "{\"a\": tru}", -EINVAL, "error: t.json: not JSON: syntax error at line 1, column 7 near \"tru}\"\n" },
	{ "{} x", -EINVAL, "error: t.json: not JSON: unexpected text after the value at line 1, column 4 near \"x\"\n" },
	{ "{}{}", -EINVAL, "error: t.json: not JSON: unexpected text after the value at line 1, column 3 near \"{}\"\n" },
	{ "[]", -EINVAL,
	  "error: t.json: expected a JSON object (a Kubernetes object or List, or the original {\"Services\": [...]}), got an array\n" },
	{ "\"Service\"", -EINVAL,
	  "error: t.json: expected a JSON object (a Kubernetes object or List, or the original {\"Services\": [...]}), got \"Service\"\n" },
	{ "{\"foo\": 1}", -EINVAL,
	  "error: t.json: neither a Kubernetes object (no \"kind\") nor the original format (no \"Services\")\n" },
	{ "{\"Kind\": \"List\", \"items\": []}", -EINVAL,
	  "error: t.json: neither a Kubernetes object (no \"kind\") nor the original format (no \"Services\")\n" },
	{ "{\"kind\": 5}", -EINVAL, "error: t.json: kind: expected a string, got 5\n" },
	{ "{\"kind\": \"List\", \"items\": {}}", -EINVAL, "error: t.json: items: expected an array, got an object\n" },
	{ "{\"Services\": {}}", -EINVAL, "error: t.json: Services: expected an array, got an object\n" },
};

static void test_bad_texts(void **state)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad_texts); i++) {
		struct decoded d = { 0 };
		struct diag_list dl;

		diag_list_init(&dl);
		print_message("case %zu: %s\n", i, bad_texts[i].json);
		assert_int_equal(run(bad_texts[i].json, &d, &dl), bad_texts[i].ret);
		assert_int_equal(d.n_services + d.n_slices, 0);
		assert_diags(&dl, bad_texts[i].diag);
		decoded_done(&d);
		diag_list_done(&dl);
	}
}

/* A whole-text rejection leaves earlier items in *out untouched. */
static void test_reject_keeps_out(void **state)
{
	struct decoded d = { 0 };
	struct diag_list dl;

	diag_list_init(&dl);
	assert_int_equal(run(SVC(PORT80), &d, &dl), 0);
	assert_int_equal(d.n_services, 1);
	assert_int_equal(run("{\"kind\":\"List\",\"items\":[" SVC(PORT80) ",]}", &d, &dl), -EINVAL);
	assert_int_equal(d.n_services, 1);
	decoded_done(&d);
	diag_list_done(&dl);
}

static void test_deep_nesting(void **state)
{
	struct decoded d = { 0 };
	struct diag_list dl;
	char *json = malloc(40000);
	size_t i, n = 0;

	assert_non_null(json);
	n += (size_t)sprintf(json, "{\"kind\":\"List\",\"items\":");
	for (i = 0; i < 5000; i++)
		json[n++] = '[';
	for (i = 0; i < 5000; i++)
		json[n++] = ']';
	json[n++] = '}';
	diag_list_init(&dl);
	assert_int_equal(run_len(json, n, &d, &dl), -EINVAL);
	assert_int_equal(dl.n, 1);
	/* cJSON stops at its limit: that is the message, not a syntax error
	 * (the root object and 999 arrays are open at the 1000th "[", column 1023) */
	assert_string_equal(dl.items[0].msg,
			    "arrays and objects nested deeper than 1000 levels at line 1, column 1023");
	free(json);
	decoded_done(&d);
	diag_list_done(&dl);
}

/* ---- limits ---- */

static void test_limit_file_size(void **state)
{
	size_t len = DECODE_MAX_FILE_SIZE + 1u;
	char *big = malloc(len); /* never read: the length alone is refused */
	struct decoded d = { 0 };
	struct diag_list dl;

	assert_non_null(big);
	diag_list_init(&dl);
	assert_int_equal(decode_buffer(big, len, "big.json", &d, &dl), -EFBIG);
	assert_diags(&dl, "error: big.json: 268435457 bytes exceed the limit of 268435456 bytes\n");
	free(big);
	diag_list_done(&dl);
}

/* Build "{...,"items":[ITEM,ITEM,...]}" with n items. */
static char *repeat(const char *head, const char *item, size_t n, const char *tail)
{
	size_t hl = strlen(head), il = strlen(item), tl = strlen(tail), i, o = 0;
	char *s = malloc(hl + n * (il + 1) + tl + 1);

	assert_non_null(s);
	memcpy(s, head, hl);
	o = hl;
	for (i = 0; i < n; i++) {
		if (i)
			s[o++] = ',';
		memcpy(s + o, item, il);
		o += il;
	}
	memcpy(s + o, tail, tl + 1);
	return s;
}

static void test_limit_items(void **state)
{
	struct decoded d = { 0 };
	struct diag_list dl;
	char *json;

	diag_list_init(&dl);
	json = repeat("{\"kind\":\"List\",\"items\":[", "{\"kind\":\"Pod\"}", DECODE_MAX_ITEMS, "]}");
	assert_int_equal(run(json, &d, &dl), 0);
	assert_int_equal(dl.n, 0);
	free(json);
	json = repeat("{\"kind\":\"List\",\"items\":[", "{}", DECODE_MAX_ITEMS + 1, "]}");
	assert_int_equal(run(json, &d, &dl), -EFBIG);
	assert_diags(&dl, "error: t.json: items: more than 200000 entries\n");
	free(json);
	diag_list_done(&dl);
	diag_list_init(&dl);
	/* Items that stream (they carry a kind): the List is blamed, not the
	 * last item decoded before the limit. */
	json = repeat("{\"kind\":\"List\",\"items\":[", "{\"kind\":\"Pod\"}", DECODE_MAX_ITEMS + 1,
		      "]}");
	assert_int_equal(run(json, &d, &dl), -EFBIG);
	assert_diags(&dl, "error: t.json: items: more than 200000 entries\n");
	free(json);
	diag_list_done(&dl);
	diag_list_init(&dl);
	json = repeat("{\"services\":[", "5", DECODE_MAX_ITEMS + 1, "]}");
	assert_int_equal(run(json, &d, &dl), -EFBIG);
	assert_diags(&dl, "error: t.json: Services: more than 200000 entries\n");
	free(json);
	assert_int_equal(d.n_services + d.n_slices, 0);
	diag_list_done(&dl);
}

static void test_limit_counts(void **state)
{
	static const struct {
		const char *head, *item, *tail;
		size_t n;
		const char *diag; /* NULL: accepted */
	} cases[] = {
		{ "{" SVC_META ",\"spec\":{\"ports\":[", "{\"port\":1,\"name\":\"p\"}", "]}}", DECODE_MAX_PORTS + 1,
		  "error: t.json: shop/web: spec.ports: more than 1024 entries\n" },
		{ "{" SVC_META ",\"spec\":{\"externalIPs\":[", "\"198.18.200.1\"", "]}}", DECODE_MAX_ADDRS,
		  NULL },
		{ "{" SVC_META ",\"spec\":{\"externalIPs\":[", "\"198.18.200.1\"", "]}}", DECODE_MAX_ADDRS + 1,
		  "error: t.json: shop/web: spec.externalIPs: more than 64 entries\n" },
		{ "{" SVC_META ",\"spec\":{\"loadBalancerSourceRanges\":[", "\"198.18.1.0/25\"", "]}}",
		  DECODE_MAX_ADDRS + 1,
		  "error: t.json: shop/web: spec.loadBalancerSourceRanges: more than 64 entries\n" },
		{ SLICE("\"endpoints\":["), "{\"addresses\":[\"198.18.65.1\"]}", "]}", DECODE_MAX_ENDPOINTS,
		  NULL },
		{ "{" SLICE_META("\"kubernetes.io/service-name\":\"web\"") ",\"addressType\":\"IPv4\",\"endpoints\":[",
		  "{\"addresses\":[\"198.18.65.1\"]}", "]}", DECODE_MAX_ENDPOINTS + 1,
		  "error: t.json: EndpointSlice shop/web-abc: endpoints: more than 10000 entries\n" },
		{ "{" SLICE_META("\"kubernetes.io/service-name\":\"web\"") ",\"addressType\":\"IPv4\",\"ports\":[",
		  "{\"port\":1}", "]}", DECODE_MAX_PORTS + 1,
		  "error: t.json: EndpointSlice shop/web-abc: ports: more than 1024 entries\n" },
		{ EPS("\"subsets\":[{\"addresses\":["), "{\"ip\":\"198.18.65.1\"}", "]}]}",
		  DECODE_MAX_ENDPOINTS + 1,
		  "error: t.json: Endpoints shop/inv: subsets[0].addresses: more than 10000 entries\n" },
		{ EPS("\"subsets\":["), "{\"addresses\":[{\"ip\":\"198.18.65.1\"}]}", "]}",
		  DECODE_MAX_ENDPOINTS + 1, "error: t.json: Endpoints shop/inv: subsets: more than 10000 entries\n" },
		{ EPS("\"subsets\":[{\"addresses\":["), "{\"ip\":\"198.18.65.1\"}",
		  "]},{\"notReadyAddresses\":[{\"ip\":\"198.18.65.2\"}]}]}", DECODE_MAX_ENDPOINTS,
		  "error: t.json: Endpoints shop/inv: subsets[1].notReadyAddresses[0]: more than 10000 addresses in the object\n" },
		{ "{\"Services\":[{\"Name\":\"n\",\"Port\":1,\"Endpoints\":[", "\"198.18.65.1:80\"", "]}]}",
		  DECODE_MAX_ENDPOINTS + 1, "error: t.json: default/n: Endpoints: more than 10000 entries\n" },
	};
	size_t i;

	/* SLICE() closes its object; rebuild the prefix without the brace. */
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct decoded d = { 0 };
		struct diag_list dl;
		char *json, *head = strdup(cases[i].head);
		size_t hl = strlen(head);

		if (head[hl - 1] == '}')
			head[hl - 1] = '\0';
		json = repeat(head, cases[i].item, cases[i].n, cases[i].tail);
		diag_list_init(&dl);
		print_message("case %zu\n", i);
		assert_int_equal(run(json, &d, &dl), 0);
		if (cases[i].diag) {
			assert_diags(&dl, cases[i].diag);
			assert_int_equal(d.n_services + d.n_slices, 0);
		} else {
			assert_int_equal(dl.n, 0);
			assert_int_equal(d.n_services + d.n_slices, 1);
		}
		free(json);
		free(head);
		decoded_done(&d);
		diag_list_done(&dl);
	}
}

static void test_limit_string(void **state)
{
	struct decoded d = { 0 };
	struct diag_list dl;
	char *name = malloc(DECODE_MAX_STRING + 2);
	char *json;

	assert_non_null(name);
	memset(name, 'a', DECODE_MAX_STRING + 1);
	name[DECODE_MAX_STRING + 1] = '\0';
	assert_true(asprintf(&json, "{\"kind\":\"Service\",\"metadata\":{\"name\":\"%s\"}}", name) > 0);
	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), 0);
	assert_diags(&dl, "error: t.json: Service: metadata.name: string longer than 4096 bytes\n");
	free(json);
	diag_list_done(&dl);

	/* Exactly at the limit: the length check passes, the name rule speaks. */
	name[DECODE_MAX_STRING] = '\0';
	assert_true(asprintf(&json, "{\"kind\":\"Service\",\"metadata\":{\"name\":\"%s\"}}", name) > 0);
	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), 0);
	assert_int_equal(dl.n, 1);
	assert_non_null(strstr(dl.items[0].msg, "...\" is not a valid service name"));
	assert_true(strlen(dl.items[0].msg) < 120);
	free(json);
	diag_list_done(&dl);

	/* A long string in a field we do not keep is fine. */
	name[DECODE_MAX_STRING] = 'a';
	assert_true(asprintf(&json, SVCX("\"spec\":{\"ports\":[{\"port\":80}]},\"x\":\"%s\""), name) > 0);
	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), 0);
	assert_int_equal(dl.n, 0);
	assert_int_equal(d.n_services, 1);
	free(json);
	free(name);
	decoded_done(&d);
	diag_list_done(&dl);
}

/* ---- accepted objects, every field ---- */

static void test_service_all_fields(void **state)
{
	static const char json[] =
		"{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"checkout\","
		"\"namespace\":\"shop\",\"uid\":\"u\",\"labels\":{\"app\":\"x\","
		"\"service.kubernetes.io/service-proxy-name\":\"other-proxy\"}},"
		"\"spec\":{\"type\":\"LoadBalancer\",\"clusterIP\":\"198.019.000.012\","
		"\"clusterIPs\":[\"198.19.0.12\",\"fd00::12\"],"
		"\"ports\":[{\"name\":\"https\",\"port\":443,\"targetPort\":8443,\"nodePort\":30443},"
		"{\"name\":\"dns\",\"protocol\":\"UDP\",\"port\":53,\"targetPort\":\"dns-udp\",\"nodePort\":30053},"
		"{\"name\":\"sig\",\"protocol\":\"SCTP\",\"port\":3868}],"
		"\"externalIPs\":[\"198.18.200.10\",\"198.18.200.11\"],"
		"\"loadBalancerSourceRanges\":[\" 198.18.1.0/25 \",\"198.18.2.7/24\"],"
		"\"sessionAffinity\":\"ClientIP\",\"sessionAffinityConfig\":{\"clientIP\":{\"timeoutSeconds\":600}},"
		"\"externalTrafficPolicy\":\"Local\",\"internalTrafficPolicy\":\"Local\","
		"\"healthCheckNodePort\":32100,\"someNewField\":{\"x\":[1,2]}},"
		"\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"198.18.200.1\",\"ipMode\":\"VIP\"},"
		"{\"hostname\":\"lb.example.com\"},{\"ip\":\"198.18.200.2\",\"ipMode\":\"Proxy\"},"
		"{\"ip\":\"198.18.200.3\"}]}}}";
	struct decoded d = { 0 };
	struct diag_list dl;
	const struct service *s;

	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), 0);
	assert_int_equal(dl.n, 0);
	assert_int_equal(d.n_services, 1);
	assert_int_equal(d.n_slices, 0);
	s = d.services[0];
	assert_int_equal(s->refcnt, 1);
	assert_int_equal(s->origin, ORIGIN_K8S);
	assert_string_equal(s->ns, "shop");
	assert_string_equal(s->name, "checkout");
	assert_int_equal(s->type, SVC_LOAD_BALANCER);
	assert_false(s->headless);
	assert_string_equal(s->proxy_name, "other-proxy");
	assert_int_equal(s->n_cluster_ips, 2);
	assert_string_equal(fmt_ip(&s->cluster_ips[0]), "198.19.0.12");
	assert_int_equal(s->cluster_ips[0].family, AF_INET);
	assert_string_equal(fmt_ip(&s->cluster_ips[1]), "fd00::12");
	assert_int_equal(s->cluster_ips[1].family, AF_INET6);
	assert_int_equal(s->n_ports, 3);
	assert_string_equal(s->ports[0].name, "https");
	assert_int_equal(s->ports[0].protocol, PROTO_TCP);
	assert_int_equal(s->ports[0].port, 443);
	assert_int_equal(s->ports[0].node_port, 30443);
	assert_string_equal(s->ports[0].target_port, "8443");
	assert_int_equal(s->ports[1].protocol, PROTO_UDP);
	assert_string_equal(s->ports[1].target_port, "dns-udp");
	assert_int_equal(s->ports[1].node_port, 30053);
	assert_int_equal(s->ports[2].protocol, PROTO_SCTP);
	assert_string_equal(s->ports[2].target_port, "3868");
	assert_int_equal(s->ports[2].node_port, 0);
	assert_int_equal(s->n_external_ips, 2);
	assert_string_equal(fmt_ip(&s->external_ips[1]), "198.18.200.11");
	assert_int_equal(s->n_lb_source_ranges, 2);
	assert_string_equal(fmt_ip(&s->lb_source_ranges[0].addr), "198.18.1.0");
	assert_int_equal(s->lb_source_ranges[0].plen, 25);
	assert_string_equal(fmt_ip(&s->lb_source_ranges[1].addr), "198.18.2.0");
	assert_int_equal(s->lb_source_ranges[1].plen, 24);
	assert_true(s->affinity_client_ip);
	assert_int_equal(s->affinity_timeout, 600);
	assert_int_equal(s->ext_policy, POLICY_LOCAL);
	assert_int_equal(s->int_policy, POLICY_LOCAL);
	assert_int_equal(s->health_check_node_port, 32100);
	assert_int_equal(s->n_lb_ingress, 3);
	assert_string_equal(fmt_ip(&s->lb_ingress[0].ip), "198.18.200.1");
	assert_false(s->lb_ingress[0].ipmode_proxy);
	assert_string_equal(fmt_ip(&s->lb_ingress[1].ip), "198.18.200.2");
	assert_true(s->lb_ingress[1].ipmode_proxy);
	assert_false(s->lb_ingress[2].ipmode_proxy);
	decoded_done(&d);
	assert_null(d.services);
	diag_list_done(&dl);
}

/* kubectl prints an EndpointSlice's unnamed port as "name": "" (the API's
 * pointer to an empty string): that is the unnamed port, not an error. */
static void test_slice_unnamed_port(void **state)
{
	struct decoded d = { 0 };
	struct diag_list dl;

	(void)state;
	diag_list_init(&dl);
	assert_int_equal(run(SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"]}],"
				   "\"ports\":[{\"name\":\"\",\"port\":8080,\"protocol\":\"TCP\"}]"),
			     &d, &dl),
			 0);
	assert_int_equal(dl.n, 0);
	assert_int_equal(d.n_slices, 1);
	assert_int_equal(d.slices[0]->n_ports, 1);
	assert_string_equal(d.slices[0]->ports[0].name, "");
	assert_int_equal(d.slices[0]->ports[0].port, 8080);
	decoded_done(&d);
	diag_list_done(&dl);
}

static void test_service_defaults(void **state)
{
	struct decoded d = { 0 };
	struct diag_list dl;
	const struct service *s;

	diag_list_init(&dl);
	assert_int_equal(run("{\"kind\":\"Service\",\"metadata\":{\"name\":\"web\"},"
			     "\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":0},{\"name\":\"b\",\"port\":81,"
			     "\"targetPort\":\"\",\"protocol\":\"\"}],\"clusterIP\":\"\",\"type\":\"\","
			     "\"sessionAffinity\":\"ClientIP\",\"externalTrafficPolicy\":\"Global\","
			     "\"externalIPs\":null,\"status\":null}}",
			     &d, &dl), 0);
	assert_int_equal(dl.n, 0);
	assert_int_equal(d.n_services, 1);
	s = d.services[0];
	assert_string_equal(s->ns, "default");
	assert_int_equal(s->type, SVC_CLUSTER_IP);
	assert_int_equal(s->n_cluster_ips, 0);
	assert_false(s->headless);
	assert_null(s->proxy_name);
	assert_string_equal(s->ports[0].name, "");
	assert_int_equal(s->ports[0].protocol, PROTO_TCP);
	assert_string_equal(s->ports[0].target_port, "80");
	assert_string_equal(s->ports[1].target_port, "81");
	assert_int_equal(s->ports[1].protocol, PROTO_TCP);
	assert_true(s->affinity_client_ip);
	assert_int_equal(s->affinity_timeout, 10800);
	assert_int_equal(s->ext_policy, POLICY_CLUSTER);
	assert_int_equal(s->int_policy, POLICY_CLUSTER);
	assert_int_equal(s->health_check_node_port, 0);
	assert_int_equal(s->n_external_ips + s->n_lb_ingress + s->n_lb_source_ranges, 0);
	decoded_done(&d);
	diag_list_done(&dl);
}

static void test_service_variants(void **state)
{
	static const struct {
		const char *json;
		enum svc_type type;
		bool headless;
		size_t n_cluster_ips;
		const char *cluster_ip;
		uint16_t node_port;
		const char *diag;
	} cases[] = {
		{ SVC("\"clusterIP\":\"None\"," PORT80), SVC_CLUSTER_IP, true, 0, NULL, 0, "" },
		{ SVC("\"clusterIP\":\"None\",\"clusterIPs\":[\"None\"]," PORT80), SVC_CLUSTER_IP, true, 0, NULL, 0, "" },
		{ SVC("\"clusterIPs\":[\"None\"]," PORT80), SVC_CLUSTER_IP, true, 0, NULL, 0, "" },
		{ "{\"kind\":\"Service\",\"metadata\":{\"name\":\"web\",\"namespace\":\"shop\",\"labels\":"
		  "{\"service.kubernetes.io/headless\":\"\"}},\"spec\":{\"clusterIP\":\"198.19.0.1\"," PORT80 "}}",
		  SVC_CLUSTER_IP, true, 1, "198.19.0.1", 0, "" },
		{ SVC("\"clusterIP\":\"198.019.000.001\"," PORT80), SVC_CLUSTER_IP, false, 1, "198.19.0.1", 0, "" },
		{ SVC("\"clusterIP\":\"198.19.0.1\",\"clusterIPs\":[\"198.019.0.1\"]," PORT80), SVC_CLUSTER_IP,
		  false, 1, "198.19.0.1", 0, "" },
		{ SVC("\"clusterIPs\":[\"fd00::1\"]," PORT80), SVC_CLUSTER_IP, false, 1, "fd00::1", 0, "" },
		{ SVC("\"type\":\"NodePort\",\"clusterIP\":\"198.19.0.1\",\"ports\":[{\"port\":80,\"nodePort\":30080}]"),
		  SVC_NODE_PORT, false, 1, "198.19.0.1", 30080, "" },
		{ SVC("\"type\":\"NodePort\",\"ports\":[{\"port\":80,\"nodePort\":80}]"), SVC_NODE_PORT, false, 0, NULL,
		  80, "" },
		{ SVC("\"type\":\"LoadBalancer\",\"ports\":[{\"port\":80}]"), SVC_LOAD_BALANCER, false, 0, NULL, 0, "" },
		{ SVC("\"type\":\"ExternalName\",\"externalName\":\"db.example.com\""), SVC_EXTERNAL_NAME, false, 0, NULL,
		  0, "" },
		{ SVC("\"type\":\"ClusterIP\",\"ports\":[{\"port\":80,\"nodePort\":30080}]"), SVC_CLUSTER_IP, false, 0,
		  NULL, 0, "warning: t.json: shop/web: spec.ports[0].nodePort: ignored for a service of type ClusterIP\n" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct decoded d = { 0 };
		struct diag_list dl;
		const struct service *s;

		diag_list_init(&dl);
		print_message("case %zu\n", i);
		assert_int_equal(run(cases[i].json, &d, &dl), 0);
		assert_diags(&dl, cases[i].diag);
		assert_int_equal(d.n_services, 1);
		s = d.services[0];
		assert_int_equal(s->type, cases[i].type);
		assert_int_equal(s->headless, cases[i].headless);
		assert_int_equal(s->n_cluster_ips, cases[i].n_cluster_ips);
		if (cases[i].cluster_ip)
			assert_string_equal(fmt_ip(&s->cluster_ips[0]), cases[i].cluster_ip);
		if (s->n_ports)
			assert_int_equal(s->ports[0].node_port, cases[i].node_port);
		decoded_done(&d);
		diag_list_done(&dl);
	}
}

static void test_endpointslice(void **state)
{
	static const char json[] =
		"{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"addressType\":\"IPv4\","
		"\"metadata\":{\"name\":\"web-7x2kq\",\"namespace\":\"shop\",\"generateName\":\"web-\","
		"\"labels\":{\"kubernetes.io/service-name\":\"web\",\"x\":\"y\"}},"
		"\"ports\":[{\"name\":\"http\",\"port\":8080,\"protocol\":\"TCP\",\"appProtocol\":\"http\"},"
		"{\"name\":\"dns\",\"port\":53,\"protocol\":\"UDP\"},{\"name\":\"all\",\"port\":null},"
		"{\"name\":\"\",\"port\":9000},{\"port\":9001}],"
		"\"endpoints\":["
		"{\"addresses\":[\"198.18.65.10\"],\"conditions\":{\"ready\":true,\"serving\":true,\"terminating\":false},"
		"\"nodeName\":\"node-a\",\"zone\":\"zone-a\",\"hints\":{\"forZones\":[{\"name\":\"zone-a\"},{\"name\":\"zone-b\"}],"
		"\"forNodes\":[{\"name\":\"node-a\"},{\"name\":\"node-b.example\"}]},"
		"\"targetRef\":{\"kind\":\"Pod\",\"name\":\"p\"}},"
		"{\"addresses\":[\"198.18.66.10\",\"198.18.66.11\"]},"
		"{\"addresses\":[\"198.18.66.12\"],\"conditions\":{\"ready\":false,\"serving\":true,\"terminating\":true},"
		"\"hints\":{}},"
		"{\"addresses\":[\"198.18.66.13\"],\"conditions\":{\"ready\":false},\"hints\":{\"forZones\":[{}],\"forNodes\":[]}},"
		"{\"addresses\":[\"198.18.66.14\"],\"conditions\":{\"ready\":null,\"serving\":false}},"
		"{\"addresses\":[\"198.18.66.15\"],\"conditions\":{\"ready\":false,\"terminating\":true}}]}";
	struct decoded d = { 0 };
	struct diag_list dl;
	const struct epslice *e;
	const struct epslice_endpoint *ep;

	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), 0);
	assert_diags(&dl, "note: t.json: EndpointSlice shop/web-7x2kq: ports[2]: no port number; ignored\n"
			  "note: t.json: EndpointSlice shop/web-7x2kq: ports[4]: no name (an unnamed port has "
			  "\"name\": \"\"); ignored, as kube-proxy ignores it\n");
	assert_int_equal(d.n_slices, 1);
	e = d.slices[0];
	assert_int_equal(e->refcnt, 1);
	assert_int_equal(e->origin, ORIGIN_K8S);
	assert_string_equal(e->ns, "shop");
	assert_string_equal(e->name, "web-7x2kq");
	assert_string_equal(e->service_name, "web");
	assert_int_equal(e->family, AF_INET);
	assert_int_equal(e->n_ports, 3);
	assert_string_equal(e->ports[0].name, "http");
	assert_int_equal(e->ports[0].port, 8080);
	assert_int_equal(e->ports[0].protocol, PROTO_TCP);
	assert_int_equal(e->ports[1].protocol, PROTO_UDP);
	assert_string_equal(e->ports[2].name, "");
	assert_int_equal(e->ports[2].port, 9000);
	assert_int_equal(e->ports[2].protocol, PROTO_TCP);
	assert_int_equal(e->n_endpoints, 6);
	ep = &e->endpoints[0];
	assert_string_equal(fmt_ip(&ep->addr), "198.18.65.10");
	assert_true(ep->ready && ep->serving && !ep->terminating);
	assert_string_equal(ep->node_name, "node-a");
	assert_string_equal(ep->zone, "zone-a");
	assert_true(ep->has_hints);
	assert_int_equal(ep->n_hint_zones, 2);
	assert_string_equal(ep->hint_zones[1], "zone-b");
	assert_int_equal(ep->n_hint_nodes, 2);
	assert_string_equal(ep->hint_nodes[0], "node-a");
	assert_string_equal(ep->hint_nodes[1], "node-b.example");
	ep = &e->endpoints[1]; /* no conditions: ready; first address only */
	assert_string_equal(fmt_ip(&ep->addr), "198.18.66.10");
	assert_true(ep->ready && ep->serving && !ep->terminating);
	assert_null(ep->node_name);
	assert_null(ep->zone);
	assert_false(ep->has_hints);
	ep = &e->endpoints[2];
	assert_true(!ep->ready && ep->serving && ep->terminating);
	assert_true(ep->has_hints);
	assert_int_equal(ep->n_hint_zones, 0);
	ep = &e->endpoints[3]; /* serving absent: serving, as kube-proxy reads it */
	assert_true(!ep->ready && ep->serving && !ep->terminating);
	/* A zone without a name is the empty zone name, as kube-proxy reads it. */
	assert_int_equal(ep->n_hint_zones, 1);
	assert_string_equal(ep->hint_zones[0], "");
	assert_int_equal(ep->n_hint_nodes, 0);
	ep = &e->endpoints[4]; /* ready null: ready */
	assert_true(ep->ready && !ep->serving && !ep->terminating);
	ep = &e->endpoints[5]; /* terminating, serving absent: a serving terminating endpoint */
	assert_true(!ep->ready && ep->serving && ep->terminating);
	decoded_done(&d);
	diag_list_done(&dl);
}

static void test_endpointslice_variants(void **state)
{
	struct decoded d = { 0 };
	struct diag_list dl;

	diag_list_init(&dl);
	/* IPv6 slices decode (the IPv4 run drops them later). */
	assert_int_equal(run("{" SLICE_META("\"kubernetes.io/service-name\":\"web\"")
			     ",\"addressType\":\"IPv6\",\"endpoints\":[{\"addresses\":[\"fd00::10\"]}],"
			     "\"ports\":null}", &d, &dl), 0);
	assert_int_equal(dl.n, 0);
	assert_int_equal(d.n_slices, 1);
	assert_int_equal(d.slices[0]->family, AF_INET6);
	assert_string_equal(fmt_ip(&d.slices[0]->endpoints[0].addr), "fd00::10");
	assert_int_equal(d.slices[0]->n_ports, 0);
	decoded_done(&d);
	/* FQDN slices are not kube-proxy's business. */
	assert_int_equal(run("{" SLICE_META("\"kubernetes.io/service-name\":\"web\"")
			     ",\"addressType\":\"FQDN\",\"endpoints\":[{\"addresses\":[\"a.example\"]}]}",
			     &d, &dl), 0);
	assert_int_equal(d.n_slices, 0);
	assert_diags(&dl, "note: t.json: EndpointSlice shop/web-abc: addressType FQDN is not used by kube-proxy; ignored\n");
	diag_list_done(&dl);
	diag_list_init(&dl);
	/* endpoints: null and no ports, as kubectl prints an empty slice. */
	assert_int_equal(run(SLICE("\"endpoints\":null"), &d, &dl), 0);
	assert_int_equal(dl.n, 0);
	assert_int_equal(d.n_slices, 1);
	assert_int_equal(d.slices[0]->n_endpoints, 0);
	decoded_done(&d);
	diag_list_done(&dl);
}

static void test_endpoints_v1(void **state)
{
	static const char json[] =
		"{\"apiVersion\":\"v1\",\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"inv\",\"namespace\":\"shop\"},"
		"\"subsets\":["
		"{\"addresses\":[{\"ip\":\"198.18.65.19\",\"nodeName\":\"node-a\",\"hostname\":\"h\"}],"
		"\"notReadyAddresses\":[{\"ip\":\"198.18.66.19\",\"nodeName\":\"node-b\"}],"
		"\"ports\":[{\"name\":\"http\",\"port\":8080,\"protocol\":\"TCP\"},{\"name\":\"dns\",\"port\":53,\"protocol\":\"UDP\"}]},"
		"{\"addresses\":[{\"ip\":\"198.18.65.20\"}],"
		"\"ports\":[{\"name\":\"http\",\"port\":9090}]},"
		"{\"addresses\":[{\"ip\":\"198.18.65.21\"}],"
		"\"ports\":[{\"name\":\"dns\",\"port\":53,\"protocol\":\"UDP\"},{\"name\":\"http\",\"port\":8080}]},"
		"{\"addresses\":[{\"ip\":\"fd00::22\"}],"
		"\"ports\":[{\"name\":\"http\",\"port\":9090}]},"
		"{\"ports\":[{\"name\":\"x\",\"port\":1}]}]}";
	struct decoded d = { 0 };
	struct diag_list dl;
	const struct epslice *e;

	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), 0);
	assert_int_equal(dl.n, 0);
	assert_int_equal(d.n_services, 0);
	assert_int_equal(d.n_slices, 3);
	/* subsets 0 and 2 have one port set (in another order): one epslice */
	e = find_slice(&d, "inv");
	assert_non_null(e);
	assert_int_equal(e->origin, ORIGIN_K8S_EP);
	assert_string_equal(e->service_name, "inv");
	assert_string_equal(e->ns, "shop");
	assert_int_equal(e->family, AF_INET);
	assert_int_equal(e->n_ports, 2);
	assert_string_equal(e->ports[0].name, "dns");
	assert_int_equal(e->ports[0].protocol, PROTO_UDP);
	assert_string_equal(e->ports[1].name, "http");
	assert_int_equal(e->ports[1].port, 8080);
	assert_int_equal(e->n_endpoints, 3);
	assert_string_equal(fmt_ip(&e->endpoints[0].addr), "198.18.65.19");
	assert_true(e->endpoints[0].ready && e->endpoints[0].serving && !e->endpoints[0].terminating);
	assert_string_equal(e->endpoints[0].node_name, "node-a");
	assert_string_equal(fmt_ip(&e->endpoints[1].addr), "198.18.66.19");
	assert_true(!e->endpoints[1].ready && !e->endpoints[1].serving && !e->endpoints[1].terminating);
	assert_string_equal(fmt_ip(&e->endpoints[2].addr), "198.18.65.21");
	e = find_slice(&d, "inv#1");
	assert_non_null(e);
	assert_int_equal(e->n_ports, 1);
	assert_int_equal(e->ports[0].port, 9090);
	assert_int_equal(e->n_endpoints, 1);
	assert_string_equal(fmt_ip(&e->endpoints[0].addr), "198.18.65.20");
	e = find_slice(&d, "inv#2");
	assert_non_null(e);
	assert_int_equal(e->family, AF_INET6);
	assert_string_equal(fmt_ip(&e->endpoints[0].addr), "fd00::22");
	decoded_done(&d);

	/* No subsets: one empty epslice, so the service is known to have none. */
	assert_int_equal(run(EPS("\"subsets\":null"), &d, &dl), 0);
	assert_int_equal(dl.n, 0);
	assert_int_equal(d.n_slices, 1);
	assert_string_equal(d.slices[0]->name, "inv");
	assert_int_equal(d.slices[0]->n_endpoints + d.slices[0]->n_ports, 0);
	decoded_done(&d);
	diag_list_done(&dl);
}

/* ---- the original format ---- */

static void test_legacy(void **state)
{
	static const char json[] =
		"{\"services\":[{\"NAME\":\"nodejs\",\"port\":10000,\"ENDPOINTS\":[\"198.18.65.30:8000\","
		"\"198.18.66.30:8000\",\"198.18.65.31:8001\",\"[fd00::1]:8000\",\"198.018.065.032:8000\"]},"
		"{\"Name\":\"dns\",\"Port\":10053,\"Protocol\":\"udp\",\"Endpoints\":[\"198.18.65.40:53\"]},"
		"{\"Name\":\"first\",\"name\":\"empty\",\"Port\":1,\"Endpoints\":null,\"Unknown\":1}]}";
	struct decoded d = { 0 };
	struct diag_list dl;
	const struct service *s;
	const struct epslice *e;

	diag_list_init(&dl);
	assert_int_equal(run(json, &d, &dl), 0);
	assert_int_equal(dl.n, 0);
	assert_int_equal(d.n_services, 3);
	s = find_service(&d, "default", "nodejs");
	assert_non_null(s);
	assert_int_equal(s->origin, ORIGIN_LEGACY);
	assert_int_equal(s->type, SVC_NODE_PORT);
	assert_int_equal(s->n_cluster_ips, 0);
	assert_int_equal(s->n_ports, 1);
	assert_string_equal(s->ports[0].name, "");
	assert_int_equal(s->ports[0].port, 10000);
	assert_int_equal(s->ports[0].node_port, 10000);
	assert_int_equal(s->ports[0].protocol, PROTO_TCP);
	assert_int_equal(s->affinity_timeout, 10800);
	assert_false(s->affinity_client_ip);
	/* one epslice per (port, family) */
	e = find_slice(&d, "nodejs");
	assert_non_null(e);
	assert_int_equal(e->origin, ORIGIN_LEGACY);
	assert_string_equal(e->service_name, "nodejs");
	assert_string_equal(e->ns, "default");
	assert_int_equal(e->n_ports, 1);
	assert_string_equal(e->ports[0].name, "");
	assert_int_equal(e->ports[0].port, 8000);
	assert_int_equal(e->ports[0].protocol, PROTO_TCP);
	assert_int_equal(e->n_endpoints, 3);
	assert_string_equal(fmt_ip(&e->endpoints[0].addr), "198.18.65.30");
	assert_string_equal(fmt_ip(&e->endpoints[1].addr), "198.18.66.30");
	assert_string_equal(fmt_ip(&e->endpoints[2].addr), "198.18.65.32");
	assert_true(e->endpoints[2].ready && e->endpoints[2].serving && !e->endpoints[2].terminating);
	e = find_slice(&d, "nodejs#1");
	assert_non_null(e);
	assert_int_equal(e->ports[0].port, 8001);
	assert_int_equal(e->n_endpoints, 1);
	e = find_slice(&d, "nodejs#2");
	assert_non_null(e);
	assert_int_equal(e->family, AF_INET6);
	assert_string_equal(fmt_ip(&e->endpoints[0].addr), "fd00::1");
	/* Protocol, case-insensitively */
	s = find_service(&d, "default", "dns");
	assert_int_equal(s->ports[0].protocol, PROTO_UDP);
	e = find_slice(&d, "dns");
	assert_int_equal(e->ports[0].protocol, PROTO_UDP);
	/* like Go: the last of several case-insensitive matches wins */
	s = find_service(&d, "default", "empty");
	assert_non_null(s);
	e = find_slice(&d, "empty");
	assert_non_null(e);
	assert_int_equal(e->n_endpoints, 0);
	assert_int_equal(d.n_slices, 5);
	decoded_done(&d);

	/* "{}" and no services: an empty config, as the original read it. */
	assert_int_equal(run("{}", &d, &dl), 0);
	assert_int_equal(run("{\"Services\":null}", &d, &dl), 0);
	assert_int_equal(run("{\"Services\":[]}", &d, &dl), 0);
	assert_int_equal(d.n_services + d.n_slices, 0);
	assert_int_equal(dl.n, 0);
	diag_list_done(&dl);
}

/* ---- kube-proxy's family split of a Service (pkg/proxy/util/utils_test.go) ---- */

/* The addresses of family fam in a (comma-separated, in order), or "". */
static void family_ips(const struct ipaddr *a, size_t stride, size_t n, int fam, char *out,
		       size_t len)
{
	size_t k = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const struct ipaddr *x = (const struct ipaddr *)((const char *)a + i * stride);

		if (x->family == fam)
			k += (size_t)snprintf(out + k, len - k, "%s%s", k ? "," : "", fmt_ip(x));
	}
}

/*
 * TestGetClusterIPByFamily, its twelve cases: the cluster IP a family's
 * proxier takes is the first of spec.clusterIPs of that family, or
 * spec.clusterIP alone ("old style") when it is of that family.
 */
static void test_kp_cluster_ip_by_family(void **state)
{
	static const struct {
		const char *name, *spec;
		int family;
		const char *want;
	} cases[] = {
		{ "old style service ipv4. want ipv4", "\"clusterIP\":\"10.0.0.10\"", AF_INET, "10.0.0.10" },
		{ "old style service ipv4. want ipv6", "\"clusterIP\":\"10.0.0.10\"", AF_INET6, "" },
		{ "old style service ipv6. want ipv6", "\"clusterIP\":\"2000::1\"", AF_INET6, "2000::1" },
		{ "old style service ipv6. want ipv4", "\"clusterIP\":\"2000::1\"", AF_INET, "" },
		{ "service single stack ipv4. want ipv4",
		  "\"clusterIPs\":[\"10.0.0.10\"],\"ipFamilies\":[\"IPv4\"]", AF_INET, "10.0.0.10" },
		{ "service single stack ipv4. want ipv6",
		  "\"clusterIPs\":[\"10.0.0.10\"],\"ipFamilies\":[\"IPv4\"]", AF_INET6, "" },
		{ "service single stack ipv6. want ipv6",
		  "\"clusterIPs\":[\"2000::1\"],\"ipFamilies\":[\"IPv6\"]", AF_INET6, "2000::1" },
		{ "service single stack ipv6. want ipv4",
		  "\"clusterIPs\":[\"2000::1\"],\"ipFamilies\":[\"IPv6\"]", AF_INET, "" },
		{ "service dual stack ipv4,6. want ipv4",
		  "\"clusterIPs\":[\"10.0.0.10\",\"2000::1\"],\"ipFamilies\":[\"IPv4\",\"IPv6\"]", AF_INET,
		  "10.0.0.10" },
		{ "service dual stack ipv4,6. want ipv6",
		  "\"clusterIPs\":[\"10.0.0.10\",\"2000::1\"],\"ipFamilies\":[\"IPv4\",\"IPv6\"]", AF_INET6,
		  "2000::1" },
		{ "service dual stack ipv6,4. want ipv6",
		  "\"clusterIPs\":[\"2000::1\",\"10.0.0.10\"],\"ipFamilies\":[\"IPv6\",\"IPv4\"]", AF_INET6,
		  "2000::1" },
		{ "service dual stack ipv6,4. want ipv4",
		  "\"clusterIPs\":[\"2000::1\",\"10.0.0.10\"],\"ipFamilies\":[\"IPv6\",\"IPv4\"]", AF_INET,
		  "10.0.0.10" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char json[512], got[256];
		struct decoded d = { 0 };
		struct diag_list dl;
		const struct service *sv;

		print_message("  case: %s\n", cases[i].name);
		diag_list_init(&dl);
		snprintf(json, sizeof(json), "{" SVC_META ",\"spec\":{%s," PORT80 "}}", cases[i].spec);
		assert_int_equal(run(json, &d, &dl), 0);
		assert_int_equal(dl.n, 0);
		sv = find_service(&d, "shop", "web");
		assert_non_null(sv);
		family_ips(sv->cluster_ips, sizeof(*sv->cluster_ips), sv->n_cluster_ips,
			   cases[i].family, got, sizeof(got));
		/* kube-proxy's proxier takes the first of its family */
		if (strchr(got, ','))
			*strchr(got, ',') = '\0';
		assert_string_equal(got, cases[i].want);
		decoded_done(&d);
		diag_list_done(&dl);
	}
}

/*
 * TestFilterIncorrectLoadBalancerIngress, its six cases: a family's proxier
 * keeps the ingress IPs of its family (ipMode VIP or none).  A hostname-only
 * entry, which kube-proxy files as "correct" for IPv4 and "incorrect" for
 * IPv6, programs nothing in either: it has no IP (decoded to nothing).
 */
static void test_kp_lb_ingress_by_family(void **state)
{
	static const struct {
		const char *name, *ingress;
		int family;
		const char *want;
	} cases[] = {
		{ "IPv4 only valid ingresses", "{\"ip\":\"1.2.3.4\",\"ipMode\":\"VIP\"},{\"ip\":\"1.2.3.5\"}",
		  AF_INET, "1.2.3.4,1.2.3.5" },
		{ "IPv4 some invalid ingresses",
		  "{\"ip\":\"1.2.3.4\",\"ipMode\":\"VIP\"},{\"ip\":\"2000::1\"},{\"hostname\":\"dummy\"}",
		  AF_INET, "1.2.3.4" },
		{ "IPv4 only invalid ingresses", "{\"ip\":\"2000::1\"},{\"ip\":\"2000::1\",\"ipMode\":\"VIP\"}",
		  AF_INET, "" },
		{ "IPv6 only valid ingresses", "{\"ip\":\"2000::1\",\"ipMode\":\"VIP\"},{\"ip\":\"2000::2\"}",
		  AF_INET6, "2000::1,2000::2" },
		{ "IPv6 some invalid ingresses",
		  "{\"ip\":\"2000::1\",\"ipMode\":\"VIP\"},{\"ip\":\"1.2.3.4\"},{\"hostname\":\"dummy\"}",
		  AF_INET6, "2000::1" },
		{ "IPv6 only invalid ingresses", "{\"ip\":\"1.2.3.4\"},{\"ip\":\"1.2.3.5\",\"ipMode\":\"VIP\"}",
		  AF_INET6, "" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char json[1024], got[256];
		struct decoded d = { 0 };
		struct diag_list dl;
		const struct service *sv;

		print_message("  case: %s\n", cases[i].name);
		diag_list_init(&dl);
		snprintf(json, sizeof(json),
			 "{" SVC_META ",\"spec\":{\"type\":\"LoadBalancer\",\"clusterIP\":\"%s\"," PORT80
			 "},\"status\":{\"loadBalancer\":{\"ingress\":[%s]}}}",
			 cases[i].family == AF_INET ? "10.0.0.10" : "2000::10", cases[i].ingress);
		assert_int_equal(run(json, &d, &dl), 0);
		assert_int_equal(dl.n, 0);
		sv = find_service(&d, "shop", "web");
		assert_non_null(sv);
		for (size_t k = 0; k < sv->n_lb_ingress; k++)
			assert_false(sv->lb_ingress[k].ipmode_proxy);
		family_ips(&sv->lb_ingress[0].ip, sizeof(*sv->lb_ingress), sv->n_lb_ingress,
			   cases[i].family, got, sizeof(got));
		assert_string_equal(got, cases[i].want);
		decoded_done(&d);
		diag_list_done(&dl);
	}
}

/* ---- decode_object (etcd values) ---- */

static void test_decode_object(void **state)
{
	static const struct {
		const char *json, *kind, *key_ns, *key_name;
		int ret;
		size_t n_services, n_slices;
		const char *ns, *name; /* of the first item */
		const char *diag;
	} cases[] = {
		{ "{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"spec\":{" PORT80 "}}", "Service", "shop", "web", 0, 1, 0,
		  "shop", "web", "" },
		{ "{\"spec\":{" PORT80 "}}", "Service", "shop", "web", 0, 1, 0, "shop", "web", "" },
		{ SVC(PORT80), "Service", "other", "api", 0, 1, 0, "shop", "web",
		  "warning: t.json: shop/web: metadata.name: name 'web' differs from the key's 'api'; using 'web'\n" },
		{ "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\"}}", "Service", "shop", "web", 0, 0, 0, NULL, NULL,
		  "error: t.json: kind: \"Pod\" (no apiVersion), expected Service\n" },
		{ SLICE("\"endpoints\":[{\"addresses\":[\"198.18.65.1\"]}]"), "EndpointSlice", NULL, NULL, 0, 0, 1,
		  "shop", "web-abc", "" },
		{ EPS("\"subsets\":[]"), "Endpoints", NULL, NULL, 0, 0, 1, "shop", "inv", "" },
		{ "{\"kind\":\"Service\",\"id\":\"nodejs\",\"port\":10000,\"containerPort\":8000,\"labels\":{}}",
		  "legacy-service", NULL, "ignored", 0, 1, 0, "default", "nodejs", "" },
		{ "{\"Port\":10000,\"Endpoints\":[\"198.18.65.1:80\"]}", "legacy-service", NULL, "nodejs", 0, 1, 0,
		  "default", "nodejs", "" },
		{ "{\"Port\":0}", "legacy-service", NULL, "nodejs", 0, 0, 0, NULL, NULL,
		  "error: t.json: default/nodejs: Port: 0 is not a valid port\n" },
		{ "{\"Name\":\"nodejs\",\"Endpoints\":[\"198.18.65.1:80\",\"198.18.65.2:80\"]}", "legacy-endpoints",
		  NULL, NULL, 0, 0, 1, "default", "nodejs", "" },
		{ "{\"endpoints\":[\"198.18.65.1:80\"]}", "legacy-endpoints", "ns1", "nodejs", 0, 0, 1, "ns1", "nodejs",
		  "" },
		{ "{\"Endpoints\":[\"x\"]}", "legacy-endpoints", NULL, "nodejs", 0, 0, 0, NULL, NULL,
		  "error: t.json: default/nodejs: Endpoints[0]: \"x\" is not a valid \"ip:port\"\n" },
		{ "{\"Port\":80}", "legacy-service", "a/b", "nodejs", -EINVAL, 0, 0, NULL, NULL,
		  "error: t.json: \"a/b\" is not a valid namespace\n" },
		{ "{}", "Pod", NULL, NULL, -EINVAL, 0, 0, NULL, NULL, "error: t.json: unknown kind 'Pod' requested\n" },
		{ "[]", "Service", NULL, NULL, -EINVAL, 0, 0, NULL, NULL,
		  "error: t.json: expected a JSON object, got an array\n" },
		{ "{", "Service", NULL, NULL, -EINVAL, 0, 0, NULL, NULL,
		  "error: t.json: not JSON: syntax error at line 1, column 1 near \"{\"\n" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct decoded d = { 0 };
		struct diag_list dl;
		const char *ns = NULL, *name = NULL;

		diag_list_init(&dl);
		print_message("case %zu: %s\n", i, cases[i].json);
		assert_int_equal(decode_object(cases[i].json, strlen(cases[i].json), cases[i].kind,
					       cases[i].key_ns, cases[i].key_name, "t.json", &d, &dl),
				 cases[i].ret);
		assert_diags(&dl, cases[i].diag);
		assert_int_equal(d.n_services, cases[i].n_services);
		assert_int_equal(d.n_slices, cases[i].n_slices);
		if (d.n_services) {
			ns = d.services[0]->ns;
			name = d.services[0]->name;
		} else if (d.n_slices) {
			ns = d.slices[0]->ns;
			name = d.slices[0]->name;
		}
		if (cases[i].ns) {
			assert_string_equal(ns, cases[i].ns);
			assert_string_equal(name, cases[i].name);
		}
		decoded_done(&d);
		diag_list_done(&dl);
	}
}

/* ---- documents: lists, kinds, duplicates ---- */

static void test_documents(void **state)
{
	static const struct {
		const char *json;
		size_t n_services, n_slices;
		const char *diag;
	} cases[] = {
		/* typed lists from the API omit the items' kind */
		{ "{\"kind\":\"ServiceList\",\"apiVersion\":\"v1\",\"items\":[{\"metadata\":{\"name\":\"a\"}},"
		  "{\"metadata\":{\"name\":\"b\"}}]}", 2, 0, "" },
		{ "{\"kind\":\"EndpointSliceList\",\"items\":[{\"metadata\":{\"name\":\"a-1\",\"labels\":"
		  "{\"kubernetes.io/service-name\":\"a\"}},\"addressType\":\"IPv4\"}]}", 0, 1, "" },
		{ "{\"kind\":\"EndpointsList\",\"items\":[{\"metadata\":{\"name\":\"a\"}}]}", 0, 1, "" },
		{ "{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"a\"}}]}", 0, 0, "" },
		/* unknown kinds in a List are ignored silently; an apiVersion
		 * of another group is another kind */
		{ "{\"kind\":\"List\",\"items\":[{\"kind\":\"Pod\",\"apiVersion\":\"v1\"},"
		  "{\"kind\":\"Service\",\"apiVersion\":\"serving.knative.dev/v1\",\"metadata\":{\"name\":\"k\"}},"
		  "{\"kind\":\"EndpointSlice\",\"apiVersion\":\"discovery.k8s.io/v1beta1\"}," SVC(PORT80) "]}",
		  1, 0, "" },
		{ "{\"kind\":\"List\",\"items\":[]}", 0, 0, "" },
		{ "{\"kind\":\"List\",\"items\":null}", 0, 0, "" },
		{ "{\"kind\":\"List\",\"items\":[{\"kind\":7}]}", 0, 0,
		  "error: t.json: object items[0]: kind: expected a string, got 7\n" },
		{ "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\"}", 0, 0,
		  "note: t.json: kind \"ConfigMap\" (v1) is not used; ignored\n" },
		/* duplicates: the first wins */
		{ "{\"kind\":\"List\",\"items\":[" SVC("\"clusterIP\":\"198.19.0.1\"," PORT80) ","
		  SVC("\"clusterIP\":\"198.19.0.2\"," PORT80) "," SVC(PORT80) "]}", 1, 0,
		  "error: t.json: shop/web: defined more than once; the later definition is ignored\n"
		  "error: t.json: shop/web: defined more than once; the later definition is ignored\n" },
		{ "{\"kind\":\"List\",\"items\":[" SLICE("\"endpoints\":null") "," SLICE("\"endpoints\":[]") "]}", 0, 1,
		  "error: t.json: EndpointSlice shop/web-abc: defined more than once; the later definition is ignored\n" },
		/* a UTF-8 byte order mark */
		{ "\xef\xbb\xbf" SVC(PORT80), 1, 0, "" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct decoded d = { 0 };
		struct diag_list dl;

		diag_list_init(&dl);
		print_message("case %zu: %s\n", i, cases[i].json);
		assert_int_equal(run(cases[i].json, &d, &dl), 0);
		assert_diags(&dl, cases[i].diag);
		assert_int_equal(d.n_services, cases[i].n_services);
		assert_int_equal(d.n_slices, cases[i].n_slices);
		if (i == 9)
			assert_string_equal(fmt_ip(&d.services[0]->cluster_ips[0]), "198.19.0.1");
		decoded_done(&d);
		diag_list_done(&dl);
	}
}

/* decode_walk(): what etcd-load stores, object by object. */
struct walk_rec {
	char log[1024];
	int stop_at;  /* call number that returns stop_r, -1 = none */
	int stop_r;
	int calls;
};

static int walk_record(const struct decode_walk_item *it, void *userdata)
{
	struct walk_rec *w = userdata;
	size_t n = strlen(w->log);

	snprintf(w->log + n, sizeof(w->log) - n, "%s|%s|%s|%s%s;", it->where,
		 it->kind ? it->kind : "-", it->known ? it->known : "-",
		 cJSON_IsObject(it->obj) ? "obj" : "?", it->legacy ? "|legacy" : "");
	return w->calls++ == w->stop_at ? w->stop_r : 0;
}

static void test_walk(void **state)
{
	static const struct {
		const char *json;
		int stop_at, stop_r;
		int r;
		const char *log;
		const char *diag;
	} cases[] = {
		{ "{\"kind\":\"ServiceList\",\"items\":[{\"metadata\":{\"name\":\"a\"}},"
		  "{\"kind\":\"Service\",\"metadata\":{\"name\":\"b\"}}]}", -1, 0, 0,
		  "items[0]|Service|Service|obj;items[1]|Service|Service|obj;", "" },
		{ "{\"kind\":\"List\",\"items\":[5,{\"metadata\":{}},{\"kind\":\"Pod\"},"
		  "{\"kind\":\"Service\",\"apiVersion\":\"serving.knative.dev/v1\"},"
		  "{\"kind\":\"EndpointSlice\",\"apiVersion\":\"discovery.k8s.io/v1\"}]}", -1, 0, 0,
		  "items[2]|Pod|-|obj;items[3]|Service|-|obj;items[4]|EndpointSlice|EndpointSlice|obj;",
		  "error: t.json: object items[0]: expected an object, got 5\n"
		  "warning: t.json: object items[1]: no kind; ignored\n" },
		{ "{\"services\":[{\"Name\":\"a\"},5]}", -1, 0, 0, "Services[0]|-|-|obj|legacy;",
		  "error: t.json: object Services[1]: expected an object, got 5\n" },
		{ "{\"kind\":\"Endpoints\",\"metadata\":{\"name\":\"a\"}}", -1, 0, 0,
		  "|Endpoints|Endpoints|obj;", "" },
		{ "{}", -1, 0, 0, "", "" },
		{ "{\"kind\":\"List\",\"items\":{}}", -1, 0, -EINVAL, "",
		  "error: t.json: items: expected an array, got an object\n" },
		{ "{\"kind\":\"List\",\"items\":[{\"kind\":\"Pod\"}", -1, 0, -EINVAL, "", NULL },
		{ "[1]", -1, 0, -EINVAL, "", NULL },
		/* stored whole, an object with a NUL anywhere would be cut short */
		{ "{\"kind\":\"List\",\"items\":[{\"kind\":\"Pod\",\"x\":[\"a\\u0000b\"]},{\"kind\":\"B\"}]}",
		  -1, 0, 0, "items[1]|B|-|obj;",
		  "error: t.json: object items[0]: x[0]: contains a NUL character (\\u0000)\n" },
		/* fn's -EINVAL skips the object, another error stops the walk */
		{ "{\"kind\":\"List\",\"items\":[{\"kind\":\"A\"},{\"kind\":\"B\"},{\"kind\":\"C\"}]}",
		  0, -EINVAL, 0, "items[0]|A|-|obj;items[1]|B|-|obj;items[2]|C|-|obj;", "" },
		{ "{\"kind\":\"List\",\"items\":[{\"kind\":\"A\"},{\"kind\":\"B\"},{\"kind\":\"C\"}]}",
		  1, -EIO, -EIO, "items[0]|A|-|obj;items[1]|B|-|obj;", "" },
	};
	_cleanup_free_ char *big = NULL;
	struct walk_rec w;
	struct diag_list dl;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		print_message("case %zu: %s\n", i, cases[i].json);
		memset(&w, 0, sizeof(w));
		w.stop_at = cases[i].stop_at;
		w.stop_r = cases[i].stop_r;
		diag_list_init(&dl);
		assert_int_equal(decode_walk(cases[i].json, strlen(cases[i].json), "t.json",
					     walk_record, &w, &dl),
				 cases[i].r);
		assert_string_equal(w.log, cases[i].log);
		if (cases[i].diag)
			assert_diags(&dl, cases[i].diag);
		else
			assert_int_equal(diag_count(&dl, DIAG_ERROR), 1);
		diag_list_done(&dl);
	}
	/* Over the item limit: nothing walked (etcd-load writes nothing). */
	big = repeat("{\"kind\":\"List\",\"items\":[", "{\"kind\":\"Pod\"}", DECODE_MAX_ITEMS + 1,
		     "]}");
	memset(&w, 0, sizeof(w));
	w.stop_at = -1;
	diag_list_init(&dl);
	assert_int_equal(decode_walk(big, strlen(big), "t.json", walk_record, &w, &dl), -EFBIG);
	assert_int_equal(w.calls, 0);
	assert_diags(&dl, "error: t.json: items: more than 200000 entries\n");
	diag_list_done(&dl);
}

/* Every prefix and many one-byte corruptions of a document that uses every
 * kind: never a crash (ASan/valgrind watch), never an unexpected code. */
static void test_corrupted_input(void **state)
{
	_cleanup_free_ char *doc = NULL;
	size_t len, i, k;
	static const char subst[] = { '"', '{', '}', '[', ']', ',', ':', '0', '-', 'x', '\\', 0 };

	assert_true(asprintf(&doc, "{\"kind\":\"List\",\"items\":[%s,%s,%s,%s]}",
			     SVC("\"type\":\"LoadBalancer\",\"clusterIP\":\"198.19.0.1\","
				 "\"ports\":[{\"name\":\"a\",\"port\":80,\"nodePort\":30080,\"targetPort\":\"web\"}],"
				 "\"loadBalancerSourceRanges\":[\"198.18.1.0/25\"],\"externalIPs\":[\"198.18.200.1\"],"
				 "\"sessionAffinity\":\"ClientIP\",\"sessionAffinityConfig\":{\"clientIP\":{\"timeoutSeconds\":5}}"),
			     SLICE("\"ports\":[{\"name\":\"a\",\"port\":8080}],\"endpoints\":[{\"addresses\":[\"198.18.65.1\"],"
				   "\"conditions\":{\"ready\":true},\"nodeName\":\"node-a\",\"zone\":\"z\","
				   "\"hints\":{\"forZones\":[{\"name\":\"z\"}]}}]"),
			     EPS("\"subsets\":[{\"addresses\":[{\"ip\":\"198.18.65.2\"}],\"ports\":[{\"port\":1}]}]"),
			     "{\"kind\":\"Service\",\"metadata\":{\"name\":\"x\"}}") > 0);
	len = strlen(doc);
	for (i = 0; i <= len; i++) {
		struct decoded d = { 0 };
		struct diag_list dl;
		int r;

		diag_list_init(&dl);
		r = run_len(doc, i, &d, &dl);
		assert_true(r == 0 || r == -EINVAL);
		if (r < 0)
			assert_int_equal(d.n_services + d.n_slices, 0);
		decoded_done(&d);
		diag_list_done(&dl);
	}
	for (i = 0; i < len; i++) {
		for (k = 0; k < ARRAY_SIZE(subst); k++) {
			struct decoded d = { 0 };
			struct diag_list dl;
			char saved = doc[i];
			int r;

			doc[i] = subst[k];
			diag_list_init(&dl);
			r = run_len(doc, len, &d, &dl);
			assert_true(r == 0 || r == -EINVAL);
			doc[i] = saved;
			decoded_done(&d);
			diag_list_done(&dl);
		}
	}
}

/* ---- shipped examples ---- */

static void test_example_cluster(void **state)
{
	struct decoded d = { 0 };
	struct diag_list dl;
	const struct service *s;
	const struct epslice *e;
	size_t i, terminating = 0, hinted = 0;

	diag_list_init(&dl);
	assert_int_equal(file_source_read(SRCDIR "/contrib/examples/cluster.json", &d, &dl), 0);
	assert_diags(&dl, "");
	assert_int_equal(d.n_services, 14);
	assert_int_equal(d.n_slices, 15);

	s = find_service(&d, "shop", "web");
	assert_non_null(s);
	assert_int_equal(s->type, SVC_NODE_PORT);
	assert_string_equal(fmt_ip(&s->cluster_ips[0]), "198.19.0.10");
	assert_int_equal(s->ports[0].port, 80);
	assert_string_equal(s->ports[0].target_port, "8080");
	assert_int_equal(s->ports[0].node_port, 30080);
	e = find_slice(&d, "web-7x2kq");
	assert_non_null(e);
	assert_int_equal(e->n_endpoints, 3);
	assert_string_equal(e->endpoints[0].node_name, "node-a");
	assert_string_equal(e->endpoints[1].node_name, "node-a");
	assert_string_equal(e->endpoints[2].node_name, "node-b");

	s = find_service(&d, "kube-system", "kube-dns");
	assert_int_equal(s->n_ports, 3);
	assert_int_equal(s->ports[0].protocol, PROTO_UDP);
	assert_int_equal(s->ports[1].protocol, PROTO_TCP);
	assert_int_equal(s->ports[0].port, 53);
	assert_true(find_service(&d, "shop", "cart")->affinity_client_ip);
	assert_int_equal(find_service(&d, "shop", "cart")->affinity_timeout, 600);
	s = find_service(&d, "shop", "checkout");
	assert_int_equal(s->type, SVC_LOAD_BALANCER);
	assert_int_equal(s->n_lb_source_ranges, 1);
	assert_int_equal(s->n_lb_ingress, 1);
	assert_string_equal(fmt_ip(&s->lb_ingress[0].ip), "198.18.200.1");
	s = find_service(&d, "shop", "frontend");
	assert_int_equal(s->ext_policy, POLICY_LOCAL);
	assert_int_equal(s->health_check_node_port, 32100);
	assert_int_equal(find_service(&d, "shop", "api")->n_external_ips, 1);
	assert_int_equal(find_service(&d, "shop", "catalog")->int_policy, POLICY_LOCAL);
	assert_true(find_service(&d, "shop", "db")->headless);
	assert_int_equal(find_service(&d, "shop", "payments-gw")->type, SVC_EXTERNAL_NAME);
	assert_string_equal(find_service(&d, "shop", "legacy-lb")->proxy_name, "other-proxy");
	assert_int_equal(find_service(&d, "shop", "signal")->ports[0].protocol, PROTO_SCTP);
	assert_int_equal(find_slice(&d, "reports-w1c6k")->n_endpoints, 0);
	assert_int_equal(find_slice(&d, "inventory")->origin, ORIGIN_K8S_EP);
	assert_int_equal(find_slice(&d, "search")->origin, ORIGIN_K8S_EP);
	assert_int_equal(find_slice(&d, "search-p0v3e")->origin, ORIGIN_K8S);
	assert_non_null(find_slice(&d, "cart-2fkq8"));
	assert_non_null(find_slice(&d, "cart-9bbzt"));

	for (i = 0; i < d.n_slices; i++) {
		size_t j;

		e = d.slices[i];
		for (j = 0; j < e->n_endpoints; j++) {
			const struct epslice_endpoint *ep = &e->endpoints[j];
			struct ipnet pods;

			/* the address plan: pods in 198.18.64.0/18 */
			assert_int_equal(ipnet_parse("198.18.64.0/18", &pods), 0);
			assert_true(ipnet_contains(&pods, &ep->addr));
			terminating += ep->terminating;
			hinted += ep->has_hints;
		}
	}
	assert_int_equal(terminating, 2);
	assert_int_equal(hinted, 2);
	for (i = 0; i < d.n_services; i++) {
		struct ipnet svc;

		assert_int_equal(ipnet_parse("198.19.0.0/16", &svc), 0);
		if (d.services[i]->n_cluster_ips)
			assert_true(ipnet_contains(&svc, &d.services[i]->cluster_ips[0]));
	}
	decoded_done(&d);
	diag_list_done(&dl);
}

static void test_example_original(void **state)
{
	struct decoded d = { 0 };
	struct diag_list dl;

	diag_list_init(&dl);
	assert_int_equal(file_source_read(SRCDIR "/contrib/examples/original.json", &d, &dl), 0);
	assert_diags(&dl, "");
	assert_int_equal(d.n_services, 3);
	assert_int_equal(d.n_slices, 4); /* frontend's endpoints use two ports */
	assert_int_equal(find_service(&d, "default", "nodejs")->ports[0].node_port, 10000);
	assert_int_equal(find_slice(&d, "nodejs")->n_endpoints, 3);
	assert_int_equal(find_slice(&d, "frontend")->ports[0].port, 80);
	assert_int_equal(find_slice(&d, "frontend#1")->ports[0].port, 8080);
	decoded_done(&d);
	diag_list_done(&dl);
}

/* ---- file source ---- */

static void test_file_directory(void **state)
{
	struct decoded d = { 0 };
	struct diag_list dl;

	diag_list_init(&dl);
	assert_int_equal(file_source_read(SRCDIR "/tests/data/decode/dir", &d, &dl), 0);
	assert_diags(&dl, "");
	/* name order: 10-api.json, 20-web.json, 30-legacy.json; README,
	 * *.json.bak and dot files ignored */
	assert_int_equal(d.n_services, 3);
	assert_string_equal(d.services[0]->name, "api");
	assert_string_equal(d.services[1]->name, "web");
	assert_string_equal(d.services[2]->name, "nodejs");
	assert_int_equal(d.n_slices, 2);
	assert_string_equal(d.slices[0]->name, "api-lk2vc");
	assert_string_equal(d.slices[1]->name, "nodejs");
	decoded_done(&d);
	diag_list_done(&dl);
}

static void test_file_broken_directory(void **state)
{
	struct decoded d = { 0 };
	struct diag_list dl;

	diag_list_init(&dl);
	assert_int_equal(run(SVC(PORT80), &d, &dl), 0);
	assert_int_equal(file_source_read(SRCDIR "/tests/data/decode/broken-dir", &d, &dl), -EINVAL);
	/* the other files are still checked, and nothing is handed over */
	assert_diags(&dl, "error: " SRCDIR "/tests/data/decode/broken-dir/b.json: not JSON: syntax error at "
			  "line 4, column 25 near \"\\x0a  ]\\x0a}\\x0a\"\n"
			  "error: " SRCDIR "/tests/data/decode/broken-dir/c.json: default/c: Port: 70000 is not a "
			  "valid port\n");
	assert_int_equal(d.n_services, 1);
	assert_int_equal(d.n_slices, 0);
	decoded_done(&d);
	diag_list_done(&dl);
}

static void test_file_errors(void **state)
{
	char dir[] = "/tmp/test-decode-XXXXXX";
	char path[300], expect[600];
	struct decoded d = { 0 };
	struct diag_list dl;
	int fd;

	assert_non_null(mkdtemp(dir));
	diag_list_init(&dl);

	/* missing */
	snprintf(path, sizeof(path), "%s/nope.json", dir);
	assert_int_equal(file_source_read(path, &d, &dl), -ENOENT);
	snprintf(expect, sizeof(expect), "error: %s: cannot open: No such file or directory\n", path);
	assert_diags(&dl, expect);
	diag_list_done(&dl);

	/* an empty directory is an empty config, said aloud */
	diag_list_init(&dl);
	assert_int_equal(file_source_read(dir, &d, &dl), 0);
	snprintf(expect, sizeof(expect), "warning: %s: no *.json files\n", dir);
	assert_diags(&dl, expect);
	diag_list_done(&dl);

	/* a FIFO named *.json in a directory is skipped, not waited on */
	snprintf(path, sizeof(path), "%s/fifo.json", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	diag_list_init(&dl);
	assert_int_equal(file_source_read(dir, &d, &dl), 0);
	snprintf(expect, sizeof(expect), "warning: %s: not a regular file; ignored\n", path);
	assert_diags(&dl, expect);
	unlink(path);
	diag_list_done(&dl);

	/* too big: refused by size, never read (a sparse file) */
	snprintf(path, sizeof(path), "%s/big.json", dir);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)DECODE_MAX_FILE_SIZE + 1), 0);
	close(fd);
	diag_list_init(&dl);
	assert_int_equal(file_source_read(path, &d, &dl), -EFBIG);
	snprintf(expect, sizeof(expect), "error: %s: larger than the limit of 268435456 bytes\n", path);
	assert_diags(&dl, expect);
	diag_list_done(&dl);
	diag_list_init(&dl);
	assert_int_equal(file_source_read(dir, &d, &dl), -EFBIG);
	assert_diags(&dl, expect);
	unlink(path);
	diag_list_done(&dl);

	/* a file given by name needs no .json suffix */
	snprintf(path, sizeof(path), "%s/config", dir);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, LEGACY("{\"Name\":\"a\",\"Port\":80}"), strlen(LEGACY("{\"Name\":\"a\",\"Port\":80}"))),
			 (ssize_t)strlen(LEGACY("{\"Name\":\"a\",\"Port\":80}")));
	close(fd);
	diag_list_init(&dl);
	assert_int_equal(file_source_read(path, &d, &dl), 0);
	assert_int_equal(d.n_services, 1);
	assert_int_equal(dl.n, 0);
	unlink(path);
	decoded_done(&d);
	diag_list_done(&dl);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_objects),
		cmocka_unit_test(test_skip_bad_keep_rest),
		cmocka_unit_test(test_stream_list),
		cmocka_unit_test(test_stream_cache),
		cmocka_unit_test(test_stream_fallback),
		cmocka_unit_test(test_bad_texts),
		cmocka_unit_test(test_reject_keeps_out),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_limit_file_size),
		cmocka_unit_test(test_limit_items),
		cmocka_unit_test(test_limit_counts),
		cmocka_unit_test(test_limit_string),
		cmocka_unit_test(test_service_all_fields),
		cmocka_unit_test(test_service_defaults),
		cmocka_unit_test(test_slice_unnamed_port),
		cmocka_unit_test(test_service_variants),
		cmocka_unit_test(test_endpointslice),
		cmocka_unit_test(test_endpointslice_variants),
		cmocka_unit_test(test_endpoints_v1),
		cmocka_unit_test(test_legacy),
		cmocka_unit_test(test_kp_cluster_ip_by_family),
		cmocka_unit_test(test_kp_lb_ingress_by_family),
		cmocka_unit_test(test_decode_object),
		cmocka_unit_test(test_documents),
		cmocka_unit_test(test_port_bounds),
		cmocka_unit_test(test_hostile_strings),
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_corrupted_input),
		cmocka_unit_test(test_example_cluster),
		cmocka_unit_test(test_example_original),
		cmocka_unit_test(test_file_directory),
		cmocka_unit_test(test_file_broken_directory),
		cmocka_unit_test(test_file_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
