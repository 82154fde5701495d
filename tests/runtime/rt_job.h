/*
 * rt_job.h - one asynchronous run on a libev loop, for the suites that
 * drive the runtime the way relayd does (test_warm.c, the security
 * suite's sec-env and sec-warm-diff). Include after rt_helpers.h (its
 * cap collects the output) and <ev.h>.
 */
#ifndef RT_JOB_H
#define RT_JOB_H

/* A run's output and outcome; done once its callback ran. */
struct job {
	cap c;
	relay_run_outcome o;
	bool done;
};

static inline void job_done(const relay_run_outcome *o, void *payload)
{
	struct job *j = payload;

	j->o = *o;
	j->done = true;
}

/* Start @s on @r into a zeroed @j; 0, or -1 (said on stdout as TAP). */
static inline int job_start(relay_runtime *r, const relay_exec_spec *s,
			    struct job *j)
{
	relay_error err;

	memset(j, 0, sizeof(*j));
	if (relay_runtime_run(r, s, cap_cb, job_done, &j->c, NULL, &err)) {
		printf("# run: %s\n", err.text);
		return -1;
	}
	return 0;
}

/* Run @loop until @j is done. */
static inline void job_wait(struct ev_loop *loop, struct job *j)
{
	while (!j->done)
		ev_run(loop, EVRUN_ONCE);
}

/* Start @s on @r into @j and run @loop until it is done: 0 when it ran,
 * -1 when it did not start. */
static inline int job_run(relay_runtime *r, struct ev_loop *loop,
			  const relay_exec_spec *s, struct job *j)
{
	if (job_start(r, s, j) != 0)
		return -1;
	job_wait(loop, j);
	return 0;
}

static inline void job_free(struct job *j)
{
	cap_free(&j->c);
}

#endif /* RT_JOB_H */
