/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * /configz: the running configuration in kube-proxy's shape (the internal
 * KubeProxyConfiguration under "kubeproxy.config.k8s.io", Go field names,
 * Go durations): kube-proxy's defaults when nothing is given, and what a
 * KubeProxyConfiguration file and flags set otherwise.
 */
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

#include "cli/configz.h"
#include "cli/options.h"
#include "util.h"

static char tmpdir[] = "/tmp/svcnat-test-configz-XXXXXX";
static char svcdir[64]; /* an empty services directory: the source */

/* Parse argv (NULL-terminated), render, return the parsed object under
 * kube-proxy's configz name (the caller deletes *ret_root). */
static cJSON *render(cJSON **ret_root, ...)
{
	struct svcnat_options o;
	char *argv[32], *json = NULL;
	int argc = 0;
	bool diff = false, done = false;
	const char *a;
	va_list ap;
	cJSON *root, *c;

	argv[argc++] = "svcnat";
	va_start(ap, ret_root);
	while ((a = va_arg(ap, const char *)) && argc < 31)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	options_init(&o);
	assert_int_equal(options_parse(argc, argv, &o, &diff, &done), 0);
	assert_int_equal(configz_render(&o, &json), 0);
	options_done(&o);
	root = cJSON_Parse(json);
	free(json);
	assert_non_null(root);
	assert_int_equal(cJSON_GetArraySize(root), 1);
	c = cJSON_GetObjectItemCaseSensitive(root, "kubeproxy.config.k8s.io");
	assert_true(cJSON_IsObject(c));
	*ret_root = root;
	return c;
}

/* The value at a dotted path of Go field names, as text ("" if absent). */
static const char *at(const cJSON *c, const char *path)
{
	static char buf[128];
	char p[128], *save = NULL;

	snprintf(p, sizeof(p), "%s", path);
	for (char *k = strtok_r(p, ".", &save); k && c; k = strtok_r(NULL, ".", &save))
		c = cJSON_GetObjectItemCaseSensitive(c, k);
	if (!c)
		return "";
	if (cJSON_IsString(c))
		return c->valuestring;
	if (cJSON_IsNumber(c))
		snprintf(buf, sizeof(buf), "%g", c->valuedouble);
	else if (cJSON_IsBool(c))
		snprintf(buf, sizeof(buf), "%s", cJSON_IsTrue(c) ? "true" : "false");
	else if (cJSON_IsNull(c))
		snprintf(buf, sizeof(buf), "null");
	else {
		char *s = cJSON_PrintUnformatted(c);
		snprintf(buf, sizeof(buf), "%s", s ? s : "");
		free(s);
	}
	return buf;
}

static void test_defaults(void **state)
{
	static const struct {
		const char *path, *want;
	} rows[] = {
		{ "Mode", "iptables" },
		{ "HealthzBindAddress", "0.0.0.0:10256" },
		{ "MetricsBindAddress", "127.0.0.1:10249" },
		{ "BindAddress", "0.0.0.0" },
		{ "SyncPeriod", "30s" },
		{ "MinSyncPeriod", "1s" },
		{ "ConfigSyncPeriod", "15m0s" },
		{ "IPTables.MasqueradeBit", "14" },
		{ "IPTables.LocalhostNodePorts", "true" },
		{ "NFTables.MasqueradeBit", "14" },
		{ "Linux.Conntrack.MaxPerCore", "32768" },
		{ "Linux.Conntrack.Min", "131072" },
		{ "Linux.Conntrack.TCPEstablishedTimeout", "24h0m0s" },
		{ "Linux.Conntrack.TCPCloseWaitTimeout", "1h0m0s" },
		{ "Linux.MasqueradeAll", "false" },
		{ "Linux.OOMScoreAdj", "-999" },
		{ "DetectLocalMode", "ClusterCIDR" },
		{ "DetectLocal.ClusterCIDRs", "null" },
		{ "NodePortAddresses", "null" },
		{ "Logging.format", "text" },
		{ "Logging.verbosity", "0" },
		{ "ClientConnection.QPS", "5" },
		{ "ClientConnection.ContentType", "application/vnd.kubernetes.protobuf" },
		{ "ClientConnection.AcceptContentTypes", "" },
		{ "HostnameOverride", "node-z" },
	};
	cJSON *root, *c = render(&root, "--config", svcdir, "--hostname", "node-z", NULL);

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		if (strcmp(at(c, rows[i].path), rows[i].want) != 0)
			fail_msg("%s: '%s', want '%s'", rows[i].path, at(c, rows[i].path), rows[i].want);
	}
	cJSON_Delete(root);
}

static void test_file_and_flags(void **state)
{
	static const struct {
		const char *path, *want;
	} rows[] = {
		{ "HealthzBindAddress", "127.0.0.1:10256" }, /* IP only: the default port */
		{ "MetricsBindAddress", "0.0.0.0:10249" },
		{ "SyncPeriod", "1m0s" },
		{ "MinSyncPeriod", "500ms" },                /* the flag over the file */
		{ "IPTables.MasqueradeBit", "15" },
		{ "IPTables.LocalhostNodePorts", "false" },
		{ "Linux.Conntrack.MaxPerCore", "0" },
		{ "Linux.Conntrack.TCPCloseWaitTimeout", "30m0s" },
		{ "Linux.MasqueradeAll", "true" },
		{ "DetectLocal.ClusterCIDRs", "[\"198.18.64.0/18\"]" },
		{ "NodePortAddresses", "[\"198.18.0.0/24\"]" },
		{ "Logging.format", "json" },
		{ "Logging.verbosity", "2" },
		{ "HostnameOverride", "node-k" },
		{ "ClientConnection.ContentType", "application/json" },
		{ "ClientConnection.AcceptContentTypes", "application/json, */*;q=0.5" },
	};
	char path[128];
	FILE *f;
	cJSON *root, *c;

	(void)state;
	snprintf(path, sizeof(path), "%s/kp.yaml", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("apiVersion: kubeproxy.config.k8s.io/v1alpha1\n"
	      "kind: KubeProxyConfiguration\n"
	      "hostnameOverride: node-k\n"
	      "healthzBindAddress: 127.0.0.1\n"
	      "metricsBindAddress: 0.0.0.0:10249\n"
	      "clusterCIDR: 198.18.64.0/18\n"
	      "nodePortAddresses: [198.18.0.0/24]\n"
	      "logging: {format: json, verbosity: 2}\n"
	      "iptables: {masqueradeBit: 15, masqueradeAll: true, localhostNodePorts: false,\n"
	      "  syncPeriod: 1m, minSyncPeriod: 2s}\n"
	      "conntrack: {maxPerCore: 0, tcpCloseWaitTimeout: 30m}\n"
	      "clientConnection: {contentType: application/json,\n"
	      "  acceptContentTypes: 'application/json, */*;q=0.5'}\n",
	      f);
	fclose(f);
	c = render(&root, "--config", svcdir, "--config", path, "--min-sync-period", "500ms", NULL);
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		if (strcmp(at(c, rows[i].path), rows[i].want) != 0)
			fail_msg("%s: '%s', want '%s'", rows[i].path, at(c, rows[i].path), rows[i].want);
	}
	cJSON_Delete(root);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_file_and_flags),
	};
	int r;

	if (!mkdtemp(tmpdir))
		return 1;
	snprintf(svcdir, sizeof(svcdir), "%s/svc", tmpdir);
	if (mkdir(svcdir, 0700) < 0)
		return 1;
	r = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(svcdir);
	rmdir(tmpdir);
	return r;
}
