#!/bin/sh
# check-exports.sh LIB - the shared library exports only relay_* symbols
# (doc/api-stability.md). Prints each offending symbol; exit 1 if any.
set -eu
lib=$1
bad=$(nm -D --defined-only "$lib" | awk '{print $NF}' |
	grep -v -E '^(relay_[a-z0-9_]+|_init|_fini|_edata|_end|__bss_start)$' || true)
count=$(nm -D --defined-only "$lib" | awk '{print $NF}' | grep -c '^relay_' || true)
# Public functions backend authors depend on (relay/sys/*.h), and those
# relayd and relayctl are built on (they link librelay.so like any
# embedder, doc/api-stability.md): each must be exported, not only
# declared.
required="relay_redis_reply_new relay_redis_malloc relay_redis_realloc
relay_redis_reply_set_str relay_redis_reply_set_elements
relay_redis_backend_check relay_redis_backend_init relay_redis_reply_free
relay_free relay_set_allocator relay_runtime_backend_init
relay_schedule_publish relay_schedule_time_format
relay_schedule_is_occurrence relay_schedule_occurrence_parse
relay_schedule_occurrence_free relay_redis_uri_check relay_redis_uri_redact
relay_app_rule_pattern_yaml relay_app_rule_pattern_json
relay_app_format_duration relay_app_runtime_available
relay_redis_cluster_check relay_slots_new relay_slots_free relay_slots_max
relay_slots_running relay_slots_app_running relay_stream_list_parse
relay_stream_list_free relay_stream_hash relay_stream_partition
relay_consumer_replay_output relay_consumer_replay_linked
relay_consumer_invoke_output relay_dlq_stderr_tail relay_app_tracing_mode
relay_trace_parent_parse relay_trace_parent_format relay_trace_state_parse
relay_trace_baggage_check relay_trace_random_ids relay_trace_context_child
relay_trace_hex relay_trace_sampler_parse relay_trace_sample relay_span_dup
relay_span_free
relay_dlq_filter_new relay_dlq_filter_free relay_dlq_filter_clock
relay_dlq_filter_app relay_dlq_filter_handler relay_dlq_filter_reason
relay_dlq_filter_since relay_dlq_filter_until relay_dlq_filter_id
relay_dlq_filter_original_id relay_dlq_filter_malformed
relay_dlq_filter_limit relay_dlq_filter_on_fields relay_dlq_filter_check
relay_dlq_filter_match relay_dlq_filter_match_malformed relay_dlq_iter_open
relay_dlq_iter_page relay_dlq_iter_next relay_dlq_iter_matched
relay_dlq_iter_close relay_dlq_time_parse relay_dlq_duration_parse
relay_dlq_when_parse relay_dlq_id_valid relay_runtime_kind_name
relay_runtime_kind_program relay_runtime_kind_check_argv"
missing=""
for s in $required; do
	nm -D --defined-only "$lib" | awk '{print $NF}' | grep -qx "$s" ||
		missing="$missing $s"
done
echo "TAP version 13"
echo "1..3"
if [ -n "$bad" ]; then
	echo "not ok 1 - only relay_* symbols exported"
	echo "$bad" | sed 's/^/# leaked: /'
else
	echo "ok 1 - only relay_* symbols exported"
fi
if [ "$count" -gt 0 ]; then
	echo "ok 2 - $count relay_* symbols exported"
else
	echo "not ok 2 - no relay_* symbols exported"
fi
if [ -z "$missing" ]; then
	echo "ok 3 - backend helpers and the programs' API exported"
else
	echo "not ok 3 - not exported:$missing"
fi
[ -z "$bad" ] && [ "$count" -gt 0 ] && [ -z "$missing" ]
