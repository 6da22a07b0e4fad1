/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * noipv6 COMMAND [ARG...]: run COMMAND as on a kernel built without IPv6,
 * where socket(AF_INET6, ...) fails with EAFNOSUPPORT (a seccomp filter,
 * inherited by every process COMMAND starts).  tests/e2e/backend-noipv6.sh
 * uses it to check what the legacy writers do on such a host without
 * needing one.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NOIPV6_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NOIPV6_ARCH AUDIT_ARCH_AARCH64
#endif

int main(int argc, char **argv)
{
	struct sock_filter f[] = {
#ifdef NOIPV6_ARCH
		/* Another ABI's syscall numbers are not socket's: let it be. */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NOIPV6_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
#endif
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 3),
		/* The low word of the domain (little-endian). */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAFNOSUPPORT),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (argc < 2) {
		fprintf(stderr, "usage: noipv6 COMMAND [ARG...]\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		fprintf(stderr, "noipv6: cannot install the seccomp filter: %s\n", strerror(errno));
		return 77;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "noipv6: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
