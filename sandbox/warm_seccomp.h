/*
 * warm_seccomp.h - the stacked seccomp filter of a warm invocation
 * (warm_seccomp.c; the profile: seccomp_profile.h).
 */
#ifndef RELAY_SANDBOX_WARM_SECCOMP_H
#define RELAY_SANDBOX_WARM_SECCOMP_H

/*
 * Load the profile's handler group (the mount family, new user
 * namespaces, clone3) on top of the base group bwrap loaded, in the
 * calling thread and what it forks from then on. Call it in an
 * invocation's process after its own set-up (mounts, its own user
 * namespace), before anything of the handler runs. Sets no_new_privs
 * (bwrap has set it already). Returns 0, also where the architecture has
 * no profile; -1 with errno.
 *
 * Thread-safety: affects the calling thread only; call it while the
 * process has a single thread.
 */
int relay__warm_seccomp_handler(void);

#endif
