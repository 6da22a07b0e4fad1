/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sources/file/pemfile.h"
#include "util.h"

static void wipe(char *data, size_t len)
{
	if (data)
		explicit_bzero(data, len);
	free(data);
}

void pemfile_done(struct pemfile *p)
{
	if (!p)
		return;
	free(p->file);
	wipe(p->data, p->len);
	*p = (struct pemfile){ 0 };
}

int pemfile_read(struct pemfile *p, enum file_mode_check mode, const struct cfgfile_who *who,
		 struct diag_list *d)
{
	char *buf = NULL;
	struct stat st;
	size_t len;
	int r;

	r = cfgfile_read(p->file, PEMFILE_MAX_SIZE, mode, who, &buf, &len, &st, d);
	if (r < 0)
		return r;
	if (!len || memchr(buf, '\0', len)) {
		wipe(buf, len);
		return cfgfile_content_error(p->file, who, d,
					     len ? "not PEM text (it holds a NUL byte)"
						 : "empty: no PEM text in it");
	}
	r = !p->data || p->len != len || memcmp(p->data, buf, len);
	wipe(p->data, p->len);
	p->data = buf;
	p->len = len;
	cfgfile_stamp_set(&p->stamp, &st);
	return r;
}

int pemfile_refresh(struct pemfile *p, enum file_mode_check mode, const struct cfgfile_who *who,
		    struct diag_list *d)
{
	struct stat st;

	if (!p->file || (p->data && stat(p->file, &st) == 0 && cfgfile_stamp_eq(&p->stamp, &st)))
		return 0;
	return pemfile_read(p, mode, who, d);
}
