/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How the EndpointSlices of a Service become its endpoints, against
 * kube-proxy's own tables: endpointslicecache_test.go (TestEndpointsMapFromESC,
 * TestEndpointInfoByServicePort) and endpointschangetracker_test.go (the
 * successor of endpoints_test.go: TestEndpointSliceUpdate, TestCheckoutChanges,
 * TestUpdateEndpointsMap).  Each row names its kube-proxy test and case.
 *
 * A row's slices go the whole way svcnat takes them: JSON through the decoder
 * (sources/decode), one merge update per slice event (an update of a slice
 * name replaces it, as kube-proxy's updatePending does), then resolve_build()
 * for the row's node name.  kube-proxy's tables key endpoints by the slice
 * port's name; svcnat gives endpoints to the ports of a Service, so each row
 * has a Service with those port names.  Endpoints print as kube-proxy lists
 * them (sorted by their "ip:port" string) with their flags: r(eady),
 * s(erving), t(erminating), l(ocal), '-' where false.
 *
 * generateEndpointSlice(svc, ns, slice, n, unreadyMod, terminatingMod, hosts,
 * ports) is kube-proxy's helper; gen() below builds the same slice: endpoint i
 * (1..n) is 10.0.<offset>.<i>, serving unless i % unreadyMod == 0, terminating
 * when i % terminatingMod == 0, ready when serving and not terminating, on
 * node hosts[i % len(hosts)]; port k is "port-<k>"/TCP.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/diag.h"
#include "core/merge.h"
#include "core/resolve.h"
#include "sources/decode/decode.h"
#include "util.h"

#define MAX_STEPS 8
#define NO_PORT (-1) /* a slice port without a number (nil) */

/* One EndpointSlice as kube-proxy's generateEndpointSliceWithOffset makes it. */
struct gen {
	const char *svc, *ns; /* default svc1 / ns1 */
	int slice, offset;    /* offset 0: the slice number */
	int n, unready, term; /* 0: 999 (never) */
	const char *hosts;    /* "host1,host2"; NULL: no nodeName */
	int ports[3];         /* 0 ends; NO_PORT: nil port */
	const char *type;     /* addressType; NULL: IPv4 */
};

struct step {
	bool remove;          /* delete the slice (by its name) */
	struct gen g;         /* used when raw is NULL */
	const char *raw;      /* a whole EndpointSlice in JSON */
};

struct row {
	const char *name;     /* kube-proxy's test and case */
	const char *hostname; /* the proxier's node name ("" none) */
	const char *svc_ports;/* the Service's ports: "port-0/TCP,port-1/TCP" */
	struct step steps[MAX_STEPS];
	const char *want;     /* "port-0: 10.0.1.1:80/rs-- ... | port-1: ..." */
};

#define G(...) { .g = { __VA_ARGS__ } }
#define DEL(...) { .remove = true, .g = { __VA_ARGS__ } }
#define RAW(j) { .raw = (j) }

/* makeTestEndpointSlice("ns1", "ep1", n, ...) of endpointschangetracker_test.go. */
#define EP1(n, eps, ports)                                                                     \
	"{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{"     \
	"\"name\":\"ep1-" #n "\",\"namespace\":\"ns1\",\"labels\":{"                            \
	"\"kubernetes.io/service-name\":\"ep1\"}},\"addressType\":\"IPv4\","                    \
	"\"endpoints\":[" eps "],\"ports\":[" ports "]}"
/* The same with an addressType: one slice per family, as the controller writes them. */
#define EP1T(n, type, eps, ports)                                                              \
	"{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{"     \
	"\"name\":\"ep1-" #n "\",\"namespace\":\"ns1\",\"labels\":{"                            \
	"\"kubernetes.io/service-name\":\"ep1\"}},\"addressType\":\"" type "\","                  \
	"\"endpoints\":[" eps "],\"ports\":[" ports "]}"
#define TCP(name, port) "{\"name\":\"" name "\",\"port\":" #port ",\"protocol\":\"TCP\"}"
#define UDP(name, port) "{\"name\":\"" name "\",\"port\":" #port ",\"protocol\":\"UDP\"}"
#define ADDR(a) "{\"addresses\":[\"" a "\"]}"
#define LOCAL(a) "{\"addresses\":[\"" a "\"],\"nodeName\":\"test-hostname\"}"
#define COND(a, r, s, t)                                                                       \
	"{\"addresses\":[\"" a "\"],\"conditions\":{\"ready\":" r ",\"serving\":" s              \
	",\"terminating\":" t "}}"

/* The duplicated endpoint of "with duplicate Endpoints, prefer non-terminating". */
#define DUP(r, s, t)                                                                           \
	"{\"addresses\":[\"10.0.1.1\"],\"nodeName\":\"host1\",\"conditions\":{\"ready\":" r      \
	",\"serving\":" s ",\"terminating\":" t "}}"

#define ESC "endpointslicecache_test.go TestEndpointsMapFromESC: "
#define EIB "endpointslicecache_test.go TestEndpointInfoByServicePort: "
#define ESU "endpointschangetracker_test.go TestEndpointSliceUpdate: "
#define ECO "endpointschangetracker_test.go TestCheckoutChanges: "
#define UEM "endpointschangetracker_test.go TestUpdateEndpointsMap: "
#define ETM "endpoints_test.go (1.2x) TestEndpointsToEndpointsMap: "

#define P01 "port-0/TCP,port-1/TCP"
#define H12 .hosts = "host1,host2"
#define H1 .hosts = "host1"
#define P(...) .ports = { __VA_ARGS__ }

static const struct row rows[] = {
	{ ESC "1 slice, 2 hosts, ports 80,443", "host1", P01,
	  { G(.slice = 1, .n = 3, H12, P(80, 443)) },
	  "port-0: 10.0.1.1:80/rs-- 10.0.1.2:80/rs-l 10.0.1.3:80/rs-- | "
	  "port-1: 10.0.1.1:443/rs-- 10.0.1.2:443/rs-l 10.0.1.3:443/rs--" },
	{ ESC "2 slices, same port", "", "port-0/TCP",
	  { G(.slice = 1, .n = 3, P(80)), G(.slice = 2, .n = 3, P(80)) },
	  "port-0: 10.0.1.1:80/rs-- 10.0.1.2:80/rs-- 10.0.1.3:80/rs-- 10.0.2.1:80/rs-- "
	  "10.0.2.2:80/rs-- 10.0.2.3:80/rs--" },
	{ ESC "2 overlapping slices, same port", "", "port-0/TCP",
	  { G(.slice = 1, .n = 3, P(80)), G(.slice = 1, .n = 4, P(80)) },
	  "port-0: 10.0.1.1:80/rs-- 10.0.1.2:80/rs-- 10.0.1.3:80/rs-- 10.0.1.4:80/rs--" },
	{ ESC "2 slices, overlapping endpoints, some endpoints unready in 1 or both", "",
	  "port-0/TCP",
	  { G(.slice = 1, .n = 10, .unready = 3, P(80)), G(.slice = 1, .n = 10, .unready = 6, P(80)) },
	  "port-0: 10.0.1.10:80/rs-- 10.0.1.1:80/rs-- 10.0.1.2:80/rs-- 10.0.1.3:80/rs-- "
	  "10.0.1.4:80/rs-- 10.0.1.5:80/rs-- 10.0.1.6:80/---- 10.0.1.7:80/rs-- 10.0.1.8:80/rs-- "
	  "10.0.1.9:80/rs--" },
	{ ESC "2 slices, overlapping endpoints, some endpoints unready and some endpoints "
	      "terminating", "", "port-0/TCP",
	  { G(.slice = 1, .n = 10, .unready = 3, .term = 5, P(80)),
	    G(.slice = 1, .n = 10, .unready = 6, .term = 5, P(80)) },
	  "port-0: 10.0.1.10:80/-st- 10.0.1.1:80/rs-- 10.0.1.2:80/rs-- 10.0.1.3:80/rs-- "
	  "10.0.1.4:80/rs-- 10.0.1.5:80/-st- 10.0.1.6:80/---- 10.0.1.7:80/rs-- 10.0.1.8:80/rs-- "
	  "10.0.1.9:80/rs--" },
	{ ESC "2 slices, overlapping endpoints, all unready", "", "port-0/TCP",
	  { G(.slice = 1, .n = 10, .unready = 1, P(80)), G(.slice = 1, .n = 10, .unready = 1, P(80)) },
	  "port-0: 10.0.1.10:80/---- 10.0.1.1:80/---- 10.0.1.2:80/---- 10.0.1.3:80/---- "
	  "10.0.1.4:80/---- 10.0.1.5:80/---- 10.0.1.6:80/---- 10.0.1.7:80/---- 10.0.1.8:80/---- "
	  "10.0.1.9:80/----" },
	{ ESC "3 slices with different services and namespaces", "", "port-0/TCP",
	  { G(.slice = 1, .n = 3, P(80)), G(.svc = "svc2", .slice = 2, .n = 3, P(80)),
	    G(.ns = "ns2", .slice = 3, .n = 3, P(80)) },
	  "port-0: 10.0.1.1:80/rs-- 10.0.1.2:80/rs-- 10.0.1.3:80/rs--" },
	{ ESC "Nil port should not break anything", "host1", "port-0/TCP",
	  { G(.slice = 1, .n = 3, H12, P(NO_PORT)) }, "port-0:" },
	{ ESC "Different endpoints with duplicate IPs should not be filtered", "host1", "port-0/TCP",
	  { G(.slice = 1, .offset = 1, .n = 2, H12, P(80)),
	    G(.slice = 2, .offset = 1, .n = 2, H12, P(8080)) },
	  "port-0: 10.0.1.1:80/rs-- 10.0.1.1:8080/rs-- 10.0.1.2:80/rs-l 10.0.1.2:8080/rs-l" },
	{ EIB "simple use case with 3 endpoints", "host1", "port-0/TCP",
	  { G(.slice = 1, .n = 3, H12, P(80)) },
	  "port-0: 10.0.1.1:80/rs-- 10.0.1.2:80/rs-l 10.0.1.3:80/rs--" },
	{ EIB "4 different slices with duplicate IPs", "host1", "port-0/TCP",
	  { G(.slice = 1, .offset = 1, .n = 2, H12, P(80)),
	    G(.slice = 2, .offset = 1, .n = 2, H12, P(8080)) },
	  "port-0: 10.0.1.1:80/rs-- 10.0.1.1:8080/rs-- 10.0.1.2:80/rs-l 10.0.1.2:8080/rs-l" },
	{ EIB "with duplicate Endpoints, prefer non-terminating", "host1", "port-0/TCP",
	  { RAW("{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{"
		"\"name\":\"svc1-1\",\"namespace\":\"ns1\",\"labels\":{"
		"\"kubernetes.io/service-name\":\"svc1\"}},\"addressType\":\"IPv4\",\"endpoints\":["
		DUP("false", "true", "true") "," DUP("true", "true", "false") ","
		DUP("false", "false", "true") "],\"ports\":[{\"name\":\"port-0\",\"port\":80,"
		"\"protocol\":\"TCP\"}]}") },
	  "port-0: 10.0.1.1:80/rs-l" },
	{ ESU "add a simple slice that doesn't already exist", "host1", P01,
	  { G(.slice = 1, .n = 3, H12, P(80, 443)) },
	  "port-0: 10.0.1.1:80/rs-- 10.0.1.2:80/rs-l 10.0.1.3:80/rs-- | "
	  "port-1: 10.0.1.1:443/rs-- 10.0.1.2:443/rs-l 10.0.1.3:443/rs--" },
	{ ESU "add the same slice that already exists", "host1", P01,
	  { G(.slice = 1, .n = 3, H12, P(80, 443)), G(.slice = 1, .n = 3, H12, P(80, 443)) },
	  "port-0: 10.0.1.1:80/rs-- 10.0.1.2:80/rs-l 10.0.1.3:80/rs-- | "
	  "port-1: 10.0.1.1:443/rs-- 10.0.1.2:443/rs-l 10.0.1.3:443/rs--" },
	{ ESU "add an FQDN slice (invalid address type)", "host1", P01,
	  { G(.slice = 1, .n = 3, H12, P(80, 443)),
	    G(.slice = 2, .n = 5, H1, P(80, 443), .type = "FQDN") },
	  "port-0: 10.0.1.1:80/rs-- 10.0.1.2:80/rs-l 10.0.1.3:80/rs-- | "
	  "port-1: 10.0.1.1:443/rs-- 10.0.1.2:443/rs-l 10.0.1.3:443/rs--" },
	{ ESU "add a slice that overlaps with existing state", "host1", P01,
	  { G(.slice = 1, .n = 3, H12, P(80, 443)), G(.slice = 2, .n = 2, H12, P(80, 443)),
	    G(.slice = 1, .n = 5, H1, P(80, 443)) },
	  "port-0: 10.0.1.1:80/rs-l 10.0.1.2:80/rs-l 10.0.1.3:80/rs-l 10.0.1.4:80/rs-l "
	  "10.0.1.5:80/rs-l 10.0.2.1:80/rs-- 10.0.2.2:80/rs-l | "
	  "port-1: 10.0.1.1:443/rs-l 10.0.1.2:443/rs-l 10.0.1.3:443/rs-l 10.0.1.4:443/rs-l "
	  "10.0.1.5:443/rs-l 10.0.2.1:443/rs-- 10.0.2.2:443/rs-l" },
	{ ESU "add a slice that overlaps with existing state and partial ports", "host1", P01,
	  { G(.slice = 1, .n = 3, H1, P(80, 443)), G(.slice = 2, .n = 2, H1, P(80, 443)),
	    G(.slice = 3, .offset = 1, .n = 5, H1, P(80)) },
	  "port-0: 10.0.1.1:80/rs-l 10.0.1.2:80/rs-l 10.0.1.3:80/rs-l 10.0.1.4:80/rs-l "
	  "10.0.1.5:80/rs-l 10.0.2.1:80/rs-l 10.0.2.2:80/rs-l | "
	  "port-1: 10.0.1.1:443/rs-l 10.0.1.2:443/rs-l 10.0.1.3:443/rs-l 10.0.2.1:443/rs-l "
	  "10.0.2.2:443/rs-l" },
	{ ESU "remove a slice that overlaps with existing state", "host1", P01,
	  { G(.slice = 1, .n = 3, H12, P(80, 443)), G(.slice = 2, .n = 2, H12, P(80, 443)),
	    DEL(.slice = 1, .n = 5, H1, P(80, 443)) },
	  "port-0: 10.0.2.1:80/rs-- 10.0.2.2:80/rs-l | port-1: 10.0.2.1:443/rs-- 10.0.2.2:443/rs-l" },
	{ ESU "remove a slice that doesn't even exist in current state", "host1", P01,
	  { G(.slice = 1, .n = 5, H1, P(80, 443)), G(.slice = 2, .n = 2, H1, P(80, 443)),
	    DEL(.slice = 3, .n = 5, H1, P(80, 443)) },
	  "port-0: 10.0.1.1:80/rs-l 10.0.1.2:80/rs-l 10.0.1.3:80/rs-l 10.0.1.4:80/rs-l "
	  "10.0.1.5:80/rs-l 10.0.2.1:80/rs-l 10.0.2.2:80/rs-l | "
	  "port-1: 10.0.1.1:443/rs-l 10.0.1.2:443/rs-l 10.0.1.3:443/rs-l 10.0.1.4:443/rs-l "
	  "10.0.1.5:443/rs-l 10.0.2.1:443/rs-l 10.0.2.2:443/rs-l" },
	{ ESU "transition all endpoints to unready state", "host1", P01,
	  { G(.slice = 1, .n = 3, H12, P(80, 443)), G(.slice = 1, .n = 3, .unready = 1, H1, P(80, 443)) },
	  "port-0: 10.0.1.1:80/---l 10.0.1.2:80/---l 10.0.1.3:80/---l | "
	  "port-1: 10.0.1.1:443/---l 10.0.1.2:443/---l 10.0.1.3:443/---l" },
	{ ESU "transition all endpoints to ready state", "host1", P01,
	  { G(.slice = 1, .n = 2, .unready = 1, H12, P(80, 443)), G(.slice = 1, .n = 2, H1, P(80, 443)) },
	  "port-0: 10.0.1.1:80/rs-l 10.0.1.2:80/rs-l | port-1: 10.0.1.1:443/rs-l 10.0.1.2:443/rs-l" },
	{ ESU "transition some endpoints to ready state", "host1", P01,
	  { G(.slice = 1, .n = 3, .unready = 2, H1, P(80, 443)),
	    G(.slice = 2, .n = 2, .unready = 2, H1, P(80, 443)),
	    G(.slice = 1, .n = 3, .unready = 3, H1, P(80, 443)) },
	  "port-0: 10.0.1.1:80/rs-l 10.0.1.2:80/rs-l 10.0.1.3:80/---l 10.0.2.1:80/rs-l "
	  "10.0.2.2:80/---l | port-1: 10.0.1.1:443/rs-l 10.0.1.2:443/rs-l 10.0.1.3:443/---l "
	  "10.0.2.1:443/rs-l 10.0.2.2:443/---l" },
	{ ESU "transition some endpoints to terminating state", "host1", P01,
	  { G(.slice = 1, .n = 3, .unready = 2, .term = 2, H1, P(80, 443)),
	    G(.slice = 2, .n = 2, .unready = 2, .term = 2, H1, P(80, 443)),
	    G(.slice = 1, .n = 3, .unready = 3, .term = 2, H1, P(80, 443)) },
	  "port-0: 10.0.1.1:80/rs-l 10.0.1.2:80/-stl 10.0.1.3:80/---l 10.0.2.1:80/rs-l "
	  "10.0.2.2:80/--tl | port-1: 10.0.1.1:443/rs-l 10.0.1.2:443/-stl 10.0.1.3:443/---l "
	  "10.0.2.1:443/rs-l 10.0.2.2:443/--tl" },
	{ ECO "adding initial slice", "", "port-0/TCP",
	  { G(.slice = 1, .n = 3, .unready = 3, .term = 2, H1, P(80)) },
	  "port-0: 10.0.1.1:80/rs-- 10.0.1.2:80/-st- 10.0.1.3:80/----" },
	{ ECO "removing port in update", "", P01,
	  { G(.slice = 1, .n = 3, .unready = 3, H1, P(80, 443)),
	    G(.slice = 1, .n = 3, .unready = 3, H1, P(80)) },
	  "port-0: 10.0.1.1:80/rs-- 10.0.1.2:80/rs-- 10.0.1.3:80/---- | port-1:" },
	/* TestUpdateEndpointsMap: the state after its "current" slices (UDP ports). */
	{ UEM "no change, unnamed port", "test-hostname", "/UDP",
	  { RAW(EP1(1, ADDR("1.1.1.1"), UDP("", 11))) }, ": 1.1.1.1:11/rs--" },
	{ UEM "no change, named port, local", "test-hostname", "p11/UDP",
	  { RAW(EP1(1, LOCAL("1.1.1.1"), UDP("p11", 11))) }, "p11: 1.1.1.1:11/rs-l" },
	{ UEM "no change, multiple slices, multiple ports, local", "test-hostname",
	  "p11/UDP,p12/UDP,p13/UDP",
	  { RAW(EP1(1, LOCAL("1.1.1.1"), UDP("p11", 11) "," UDP("p12", 12))),
	    RAW(EP1(2, ADDR("1.1.1.3"), UDP("p13", 13))) },
	  "p11: 1.1.1.1:11/rs-l | p12: 1.1.1.1:12/rs-l | p13: 1.1.1.3:13/rs--" },
	{ UEM "remove an EndpointSlice", "test-hostname", "/UDP",
	  { RAW(EP1(1, LOCAL("1.1.1.1"), UDP("", 11))),
	    { .remove = true, .raw = EP1(1, LOCAL("1.1.1.1"), UDP("", 11)) } },
	  ":" },
	{ UEM "add a slice to an endpoint", "test-hostname", "p11/UDP,p12/UDP",
	  { RAW(EP1(1, ADDR("1.1.1.1"), UDP("p11", 11))),
	    RAW(EP1(1, ADDR("1.1.1.1"), UDP("p11", 11))),
	    RAW(EP1(2, LOCAL("1.1.1.2"), UDP("p12", 12))) },
	  "p11: 1.1.1.1:11/rs-- | p12: 1.1.1.2:12/rs-l" },
	{ UEM "rename a port", "test-hostname", "p11/UDP,p11-2/UDP",
	  { RAW(EP1(1, ADDR("1.1.1.1"), UDP("p11", 11))),
	    RAW(EP1(1, ADDR("1.1.1.1"), UDP("p11-2", 11))) },
	  "p11: | p11-2: 1.1.1.1:11/rs--" },
	{ UEM "renumber a port", "test-hostname", "p11/UDP",
	  { RAW(EP1(1, ADDR("1.1.1.1"), UDP("p11", 11))),
	    RAW(EP1(1, ADDR("1.1.1.1"), UDP("p11", 22))) },
	  "p11: 1.1.1.1:22/rs--" },
	{ UEM "complex add and remove (ns1/ep1's part)", "test-hostname",
	  "p11/UDP,p12/UDP,p122/UDP",
	  { RAW(EP1(1, ADDR("1.1.1.1"), UDP("p11", 11))),
	    RAW(EP1(1, ADDR("1.1.1.1") "," ADDR("1.1.1.11"), UDP("p11", 11))),
	    RAW(EP1(2, ADDR("1.1.1.2"), UDP("p12", 12) "," UDP("p122", 122))) },
	  "p11: 1.1.1.11:11/rs-- 1.1.1.1:11/rs-- | p12: 1.1.1.2:12/rs-- | p122: 1.1.1.2:122/rs--" },
	{ UEM "change from ready to terminating pod", "test-hostname", "/UDP",
	  { RAW(EP1(1, COND("1.1.1.1", "true", "true", "false"), UDP("", 11))),
	    RAW(EP1(1, COND("1.1.1.1", "false", "true", "true"), UDP("", 11))) },
	  ": 1.1.1.1:11/-st-" },
	{ UEM "change from terminating to empty pod", "test-hostname", "/UDP",
	  { RAW(EP1(1, COND("1.1.1.1", "false", "true", "true"), UDP("", 11))),
	    RAW(EP1(1, "", UDP("", 11))) },
	  ":" },
};

/* The address families, from kube-proxy's v1 Endpoints rows (with slices the
 * family is the slice's addressType, one slice per family): run per family. */
static const struct {
	int family;
	struct row r;
} family_rows[] = {
	{ AF_INET, { ETM "should omit IPv6 address in IPv4 mode", "test-hostname", "p1/TCP,p2/TCP",
	  { RAW(EP1T(1, "IPv4", ADDR("1.1.1.1"), TCP("p1", 11) "," TCP("p2", 22))),
	    RAW(EP1T(2, "IPv6", ADDR("2001:db8:85a3:0:0:8a2e:370:7334"),
		     TCP("p1", 11) "," TCP("p2", 22))) },
	  "p1: 1.1.1.1:11/rs-- | p2: 1.1.1.1:22/rs--" } },
	{ AF_INET6, { ETM "should omit IPv4 address in IPv6 mode", "test-hostname", "p1/TCP,p2/TCP",
	  { RAW(EP1T(1, "IPv4", ADDR("1.1.1.1"), TCP("p1", 11) "," TCP("p2", 22))),
	    RAW(EP1T(2, "IPv6", ADDR("2001:db8:85a3:0:0:8a2e:370:7334"),
		     TCP("p1", 11) "," TCP("p2", 22))) },
	  "p1: 2001:db8:85a3::8a2e:370:7334:11/rs-- | p2: 2001:db8:85a3::8a2e:370:7334:22/rs--" } },
};

/* ---------------------------------------------------------------------- */

static int or_default(int v, int d)
{
	return v ? v : d;
}

/* kube-proxy's generateEndpointSliceWithOffset as JSON. */
static char *gen_json(const struct gen *g)
{
	const char *svc = g->svc ? g->svc : "svc1", *ns = g->ns ? g->ns : "ns1";
	int offset = or_default(g->offset, g->slice), unready = or_default(g->unready, 999);
	int term = or_default(g->term, 999), i, k;
	char hosts[4][32];
	size_t n_hosts = 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	if (g->hosts) {
		char tmp[128], *save = NULL;

		snprintf(tmp, sizeof(tmp), "%s", g->hosts);
		for (char *t = strtok_r(tmp, ",", &save); t && n_hosts < 4; t = strtok_r(NULL, ",", &save))
			snprintf(hosts[n_hosts++], sizeof(hosts[0]), "%s", t);
	}
	fprintf(f, "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\","
		   "\"metadata\":{\"name\":\"%s-%d\",\"namespace\":\"%s\",\"labels\":"
		   "{\"kubernetes.io/service-name\":\"%s\"}},\"addressType\":\"%s\",\"ports\":[",
		svc, g->slice, ns, svc, g->type ? g->type : "IPv4");
	for (k = 0; k < 3 && g->ports[k]; k++) {
		fprintf(f, "%s{\"name\":\"port-%d\",\"protocol\":\"TCP\"", k ? "," : "", k);
		if (g->ports[k] != NO_PORT)
			fprintf(f, ",\"port\":%d", g->ports[k]);
		fputc('}', f);
	}
	fputs("],\"endpoints\":[", f);
	for (i = 1; i <= g->n; i++) {
		bool serving = i % unready != 0, terminating = i % term == 0;

		fprintf(f, "%s{\"addresses\":[\"10.0.%d.%d\"],\"conditions\":{\"ready\":%s,"
			   "\"serving\":%s,\"terminating\":%s}",
			i > 1 ? "," : "", offset, i, serving && !terminating ? "true" : "false",
			serving ? "true" : "false", terminating ? "true" : "false");
		if (n_hosts)
			fprintf(f, ",\"nodeName\":\"%s\"", hosts[(size_t)i % n_hosts]);
		fputc('}', f);
	}
	fputs("]}", f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* The Service of a row: dual-stack ClusterIP, one port per "name/PROTO" of spec. */
static char *svc_json(const char *ns, const char *name, const char *spec)
{
	char tmp[256], *save = NULL, *buf = NULL;
	size_t len = 0;
	int k = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fprintf(f, "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"%s\","
		   "\"namespace\":\"%s\"},\"spec\":{\"clusterIP\":\"172.30.0.10\","
		   "\"clusterIPs\":[\"172.30.0.10\",\"2001:2:0:f000::10\"],"
		   "\"ipFamilyPolicy\":\"RequireDualStack\",\"ports\":[", name, ns);
	snprintf(tmp, sizeof(tmp), "%s", spec);
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save), k++) {
		char *slash = strchr(t, '/');

		assert_non_null(slash);
		*slash = '\0';
		fprintf(f, "%s{\"name\":\"%s\",\"port\":%d,\"protocol\":\"%s\"}", k ? "," : "", t,
			8000 + k, slash + 1);
	}
	fputs("]}}", f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void decode_one(const char *json, struct decoded *d)
{
	struct diag_list dl;

	diag_list_init(&dl);
	assert_int_equal(decode_buffer(json, strlen(json), "row.json", d, &dl), 0);
	for (size_t i = 0; i < dl.n; i++)
		if (dl.items[i].level == DIAG_ERROR)
			fail_msg("decode: %s", dl.items[i].msg);
	diag_list_done(&dl);
}

static void apply(struct merge *m, const char *json, enum merge_op op)
{
	struct decoded d = { 0 };

	decode_one(json, &d);
	assert_int_equal(merge_update(m, 0, op, d.services, d.n_services, d.slices, d.n_slices), 0);
	decoded_done(&d);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The endpoints of ns/name's ports as the rows write them. */
static void ports_text(const struct desired *d, const char *ns, const char *name, char *out,
		       size_t n)
{
	size_t off = 0;
	bool first = true;

	out[0] = '\0';
	for (size_t i = 0; i < d->n_ports; i++) {
		const struct svc_port *p = &d->ports[i];
		char *eps[64];
		size_t k;

		if (!streq(p->ns, ns) || !streq(p->name, name))
			continue;
		assert_true(p->n_endpoints <= ARRAY_SIZE(eps));
		for (k = 0; k < p->n_endpoints; k++) {
			const struct endpoint *e = &p->endpoints[k];
			char a[INET6_ADDRSTRLEN];

			assert_true(asprintf(&eps[k], "%s:%u/%c%c%c%c",
					     ipaddr_fmt(&e->addr, a, sizeof(a)), e->port,
					     e->ready ? 'r' : '-', e->serving ? 's' : '-',
					     e->terminating ? 't' : '-', e->is_local ? 'l' : '-') > 0);
		}
		qsort(eps, p->n_endpoints, sizeof(*eps), str_cmp);
		off += (size_t)snprintf(out + off, n - off, "%s%s:", first ? "" : " | ", p->port_name);
		for (k = 0; k < p->n_endpoints; k++) {
			off += (size_t)snprintf(out + off, n - off, " %s", eps[k]);
			free(eps[k]);
		}
		assert_true(off < n);
		first = false;
	}
}

static void run_row(const struct row *rw, int family)
{
	const char *svcs[][2] = { { "ns1", "svc1" }, { "ns1", "svc2" }, { "ns2", "svc1" } };
	const char *ns = "ns1";
	const char *name = strncmp(rw->name, UEM, strlen(UEM)) && strncmp(rw->name, ETM, strlen(ETM)) ?
				   "svc1" : "ep1";
	struct merge *m = merge_new();
	struct merge_snapshot *snap;
	struct resolve_opts o = { .hostname = rw->hostname, .family = family };
	struct desired d = { 0 };
	struct diag_list dl;
	char got[4096];

	assert_non_null(m);
	assert_int_equal(merge_source_register(m, "t"), 0);
	for (size_t i = 0; i < ARRAY_SIZE(svcs); i++) {
		char *j = svc_json(svcs[i][0], streq(name, "ep1") ? "ep1" : svcs[i][1],
				   rw->svc_ports);

		apply(m, j, MERGE_ADD);
		free(j);
	}
	for (size_t i = 0; i < MAX_STEPS && (rw->steps[i].raw || rw->steps[i].g.slice); i++) {
		const struct step *st = &rw->steps[i];
		char *j = st->raw ? strdup(st->raw) : gen_json(&st->g);

		assert_non_null(j);
		apply(m, j, st->remove ? MERGE_REMOVE : MERGE_ADD);
		free(j);
	}
	snap = merge_snapshot_get(m);
	assert_non_null(snap);
	diag_list_init(&dl);
	assert_int_equal(resolve_build(snap, &o, &d, &dl), 0);
	ports_text(&d, ns, name, got, sizeof(got));
	if (!streq(got, rw->want))
		fail_msg("%s:\n  got  %s\n  want %s", rw->name, got, rw->want);
	print_message("ok: %s\n", rw->name);
	desired_free(&d);
	diag_list_done(&dl);
	merge_snapshot_unref(snap);
	merge_free(m);
}

static void test_kube_proxy_rows(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++)
		run_row(&rows[i], AF_INET);
	for (size_t i = 0; i < ARRAY_SIZE(family_rows); i++)
		run_row(&family_rows[i].r, family_rows[i].family);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kube_proxy_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
