/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "sources/decode/decode-names.h"

static bool is_lower_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

static bool is_alnum(char ch)
{
	return is_lower_alnum(ch) || (ch >= 'A' && ch <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most max bytes */
static bool is_dns_label(const char *s, size_t max)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > max || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
		return false;
	for (i = 0; i < n; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

bool dec_is_dns1123_label(const char *s)
{
	return is_dns_label(s, 63);
}

/* A port name: a DNS label, or "" for an unnamed port (EndpointSlice ports
 * print their unnamed ports as "name": "", the API's pointer to ""). */
bool dec_is_port_name_or_empty(const char *s)
{
	return !*s || dec_is_dns1123_label(s);
}

bool dec_is_dns1035_label(const char *s)
{
	return is_dns_label(s, 63) && s[0] >= 'a' && s[0] <= 'z';
}

bool dec_is_dns1123_subdomain(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > 253)
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] == '.') {
			if (i == 0 || !is_lower_alnum(s[i - 1]) || !is_lower_alnum(s[i + 1]))
				return false;
		} else if (!is_lower_alnum(s[i]) && s[i] != '-') {
			return false;
		}
	}
	return is_lower_alnum(s[0]) && is_lower_alnum(s[n - 1]);
}

/* (([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?, at most 63 bytes */
bool dec_is_label_value(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0)
		return true;
	if (n > 63 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return false;
	for (i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

/* IANA_SVC_NAME: 1-15 of [a-z0-9-], a letter somewhere, no "--", no edge '-' */
bool dec_is_port_name(const char *s)
{
	size_t n = strlen(s), i;
	bool letter = false;

	if (n == 0 || n > 15 || s[0] == '-' || s[n - 1] == '-' || strstr(s, "--"))
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] >= 'a' && s[i] <= 'z')
			letter = true;
		else if (!(s[i] >= '0' && s[i] <= '9') && s[i] != '-')
			return false;
	}
	return letter;
}

/* Legacy (2014) names had no rules; keep what is safe in comments. */
bool dec_is_legacy_name(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > 253 || !is_alnum(s[0]))
		return false;
	for (i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}
