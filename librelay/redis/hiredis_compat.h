/*
 * librelay/redis/hiredis_compat.h - private: one code base on two client
 * libraries. A build with TLS (meson -Dtls, RELAY_HAVE_TLS) uses hiredict
 * (the maintained fork of hiredis 1.x, whose names start with redict/
 * REDICT_); a build without uses hiredis >= 0.14. The backend is written
 * with the hiredis names; here they map onto hiredict's. Only what the
 * backend and its tests use is mapped. Differences the code must mind:
 * redisFormatCommandArgv returns long long in 1.x (int in 0.14), and a
 * TLS connection's output buffer must go out through the library (never
 * a raw send(): redis_async.c's hr_flush skips TLS). Never installed.
 */
#ifndef RELAY__REDIS_HIREDIS_COMPAT_H
#define RELAY__REDIS_HIREDIS_COMPAT_H

#ifdef RELAY_HAVE_TLS
#include <hiredict/adapters/libev.h>
#include <hiredict/async.h>
#include <hiredict/hiredict.h>
#include <hiredict/hiredict_ssl.h>

#define redisAsyncContext redictAsyncContext
#define redisContext redictContext
#define redisReply redictReply
#define redisReader redictReader
#define redisAsyncCommand redictAsyncCommand
#define redisAsyncFormattedCommand redictAsyncFormattedCommand
#define redisAsyncFree redictAsyncFree
#define redisAsyncDisconnect redictAsyncDisconnect
#define redisAsyncConnect redictAsyncConnect
#define redisAsyncConnectUnix redictAsyncConnectUnix
#define redisAsyncSetConnectCallback redictAsyncSetConnectCallback
#define redisAsyncSetDisconnectCallback redictAsyncSetDisconnectCallback
#define redisLibevAttach redictLibevAttach
#define redisFormatCommandArgv redictFormatCommandArgv
#define redisFreeCommand redictFreeCommand
#define redisReaderCreate redictReaderCreate
#define redisReaderFree redictReaderFree
#define redisReaderFeed redictReaderFeed
#define redisReaderGetReply redictReaderGetReply
#define REDIS_OK REDICT_OK
#define REDIS_ERR REDICT_ERR
#define REDIS_CONNECTED REDICT_CONNECTED
#define REDIS_REPLY_STRING REDICT_REPLY_STRING
#define REDIS_REPLY_ARRAY REDICT_REPLY_ARRAY
#define REDIS_REPLY_INTEGER REDICT_REPLY_INTEGER
#define REDIS_REPLY_NIL REDICT_REPLY_NIL
#define REDIS_REPLY_STATUS REDICT_REPLY_STATUS
#define REDIS_REPLY_ERROR REDICT_REPLY_ERROR
#else
#include <hiredis/adapters/libev.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#endif

#endif /* RELAY__REDIS_HIREDIS_COMPAT_H */
