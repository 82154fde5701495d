/*
 * redis_tls.c - TLS for the hiredis backend (REDIS_URI "rediss://",
 * doc/configuration.md C-2, doc/operations.md "TLS"). Only a build with
 * TLS (meson -Dtls, hiredict + OpenSSL, RELAY_HAVE_TLS) has it; without,
 * the URI parser refuses rediss:// and these are stubs.
 *
 * One OpenSSL SSL_CTX per backend, made when it is opened: the trust
 * store is the CA file/directory given, else OpenSSL's default paths
 * (the system store; SSL_CERT_FILE and SSL_CERT_DIR apply); an optional
 * client certificate and key (mutual TLS); TLS 1.2 at least. Each
 * connection (the main one, an ASK side one, to every node of a
 * cluster) gets its own SSL from it, with SNI and host name (or IP
 * address) verification against tls_server_name or the node's host
 * (its subjectAltName only: a subject CN is never taken for a name),
 * handed to hiredict (redictInitiateSSL), which then owns it. Our own
 * SSL (rather than hiredict's context helper) lets the verify callback
 * record why a certificate was refused, so the error says "expired" or
 * "name mismatch" instead of a bare handshake failure.
 */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "hiredis_int.h"

#ifdef RELAY_HAVE_TLS
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

int relay_redis_tls_available(void)
{
	return 1;
}

/* Record why verification failed, for relay__hr_tls_explain(). */
static int verify_cb(int ok, X509_STORE_CTX *x)
{
	SSL *ssl = X509_STORE_CTX_get_ex_data(x,
		SSL_get_ex_data_X509_STORE_CTX_idx());
	hr_backend *b = ssl ? SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl))
			    : NULL;

	if (!ok && b && !b->tls_verify_err)
		b->tls_verify_err = X509_STORE_CTX_get_error(x);
	return ok;
}

/* OpenSSL's reason for the last error, or @dflt. */
static const char *ssl_reason(const char *dflt)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;

	return r ? r : dflt;
}

static int tls_fail(SSL_CTX *ctx, relay_error *err, const char *what,
		    const char *path)
{
	relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
			 "TLS: cannot use %s %s: %s", what, path,
			 ssl_reason("unreadable"));
	ERR_clear_error();
	SSL_CTX_free(ctx);
	return RELAY_EINVAL;
}

int relay__hr_tls_init(hr_backend *b, const relay_redis_options *o,
		       relay_error *err)
{
	const char *ca = NULL, *cadir = NULL, *cert = NULL, *key = NULL;
	const char *name = NULL;
	int noverify = 0;
	SSL_CTX *ctx;

	if (!b->uri.tls)
		return 0;
	if (o && o->version >= 2) {
		ca = o->tls_ca_file;
		cadir = o->tls_ca_dir;
		cert = o->tls_cert_file;
		key = o->tls_key_file;
		name = o->tls_server_name;
		noverify = o->tls_no_verify;
	}
	if (!cert != !key)
		return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
					"TLS: a client certificate needs its "
					"key and a key its certificate (set "
					"both or neither)");
	ERR_clear_error();
	ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		return relay__error_set(err, RELAY_ENOMEM, NULL, 0, 0,
					"TLS: cannot create a context: %s",
					ssl_reason("out of memory"));
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_app_data(ctx, b);
	if (ca || cadir) {
		if (SSL_CTX_load_verify_locations(ctx, ca, cadir) != 1)
			return tls_fail(ctx, err, ca ? "the CA file" :
					"the CA directory", ca ? ca : cadir);
	} else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
		return tls_fail(ctx, err, "the system trust store", "");
	}
	if (cert) {
		if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
			return tls_fail(ctx, err, "the client certificate",
					cert);
		if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM)
		    != 1 || SSL_CTX_check_private_key(ctx) != 1)
			return tls_fail(ctx, err, "the client key", key);
	}
	SSL_CTX_set_verify(ctx, noverify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
			   verify_cb);
	if (name && !(b->tls_name = relay__strdup(name))) {
		SSL_CTX_free(ctx);
		return RELAY_ENOMEM;
	}
	if (noverify)
		relay__log(&b->opts.logger, RELAY_LOG_WARN, "RELAY-REDIS13",
			   "redis TLS: certificate verification is OFF "
			   "(REDIS_TLS_VERIFY=off): the connection is "
			   "encrypted but the server is not authenticated");
	b->tls_ctx = ctx;
	return 0;
}

static int is_ip(const char *h)
{
	unsigned char buf[16];

	return inet_pton(AF_INET, h, buf) == 1 ||
	       inet_pton(AF_INET6, h, buf) == 1;
}

int relay__hr_tls_attach(hr_backend *b, redisAsyncContext *ac,
			 const char *host)
{
	const char *name = b->tls_name ? b->tls_name : host;
	SSL *ssl;
	int ok;

	b->new_ssl = NULL;
	b->tls_verify_err = 0;
	ERR_clear_error();
	ssl = SSL_new(b->tls_ctx);
	if (!ssl) {
		relay__hr_set_err(b, "TLS: out of memory");
		return -1;
	}
	/* The subjectAltName only: never OpenSSL's fallback to the
	 * subject's CN when the certificate has no DNS name. */
	X509_VERIFY_PARAM_set_hostflags(SSL_get0_param(ssl),
					X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
	if (is_ip(name)) {
		ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl),
						   name) == 1;
	} else {
		ok = SSL_set_tlsext_host_name(ssl, name) == 1 &&
		     SSL_set1_host(ssl, name) == 1;
	}
	if (!ok) {
		relay__hr_set_err(b, "TLS: cannot set the server name");
		SSL_free(ssl);
		return -1;
	}
	if (redictInitiateSSL(&ac->c, ssl) != REDIS_OK) {
		/* The handshake failed at once (a loopback connect is
		 * immediate): hiredict leaves @ssl to us. */
		relay__hr_set_err(b, ac->c.err ? ac->c.errstr :
				  ssl_reason("TLS handshake failed"));
		void *cur = b->ac_ssl;
		int answered = b->answered;

		b->ac_ssl = ssl;
		b->answered = 0;
		relay__hr_tls_explain(b);
		b->ac_ssl = cur;
		b->answered = answered;
		SSL_free(ssl);
		return -1;
	}
	b->new_ssl = ssl;
	return 0;
}

void relay__hr_tls_explain(hr_backend *b)
{
	const char *name = b->tls_name;
	char detail[sizeof(b->errstr)], msg[sizeof(b->errstr) + 300];
	int e = b->tls_verify_err;

	if (!b->uri.tls || !b->ac_ssl || b->answered)
		return;
	if (!name)
		name = b->nnodes ? b->nodes[b->cur].host : "";
	snprintf(detail, sizeof(detail), "%s", b->errstr);
	if (!SSL_is_init_finished(b->ac_ssl) &&
	    strcmp(detail, "connect timed out") == 0)
		snprintf(msg, sizeof(msg), "TLS: no TLS handshake within %d "
			 "ms: the server does not speak TLS on this port (a "
			 "plain-text port? use redis://)",
			 b->opts.connect_timeout_ms);
	else if (SSL_is_init_finished(b->ac_ssl))
		/* TLS 1.3: the client's side of the handshake ends before
		 * the server has checked the client's certificate. */
		snprintf(msg, sizeof(msg), "TLS: the server closed the "
			 "connection after the handshake, before any answer "
			 "(does it require a client certificate? "
			 "REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE): %s",
			 detail);
	else if (e == X509_V_ERR_HOSTNAME_MISMATCH ||
	    e == X509_V_ERR_IP_ADDRESS_MISMATCH)
		snprintf(msg, sizeof(msg), "TLS: the server's certificate "
			 "does not match the name %s (set "
			 "REDIS_TLS_SERVER_NAME to the name it was issued "
			 "for)", name);
	else if (e == X509_V_ERR_CERT_HAS_EXPIRED)
		snprintf(msg, sizeof(msg), "TLS: the server's certificate "
			 "has expired");
	else if (e == X509_V_ERR_CERT_NOT_YET_VALID)
		snprintf(msg, sizeof(msg), "TLS: the server's certificate "
			 "is not valid yet (check the clocks)");
	else if (e)
		snprintf(msg, sizeof(msg), "TLS: the server's certificate "
			 "is not trusted (%s): give its CA with "
			 "REDIS_TLS_CA_FILE or REDIS_TLS_CA_DIR",
			 X509_verify_cert_error_string(e));
	else if (strstr(detail, "wrong version number") ||
		 strstr(detail, "packet length too long") ||
		 strstr(detail, "record layer failure"))
		snprintf(msg, sizeof(msg), "TLS: the server does not speak "
			 "TLS on this port (a plain-text port? use "
			 "redis://): %s", detail);
	else
		snprintf(msg, sizeof(msg), "TLS: the handshake failed, the "
			 "server refused it (does it require a client "
			 "certificate? REDIS_TLS_CERT_FILE and "
			 "REDIS_TLS_KEY_FILE): %s", detail);
	relay__hr_set_err(b, msg);
}

void relay__hr_tls_free(hr_backend *b)
{
	SSL_CTX_free(b->tls_ctx);
	b->tls_ctx = NULL;
	relay__free(b->tls_name);
	b->tls_name = NULL;
}

#else /* !RELAY_HAVE_TLS: rediss:// is refused by the URI parser */

int relay_redis_tls_available(void)
{
	return 0;
}

int relay__hr_tls_init(hr_backend *b, const relay_redis_options *o,
		       relay_error *err)
{
	(void)o;
	if (!b->uri.tls)
		return 0;
	return relay__error_set(err, RELAY_EINVAL, NULL, 0, 0,
				"TLS (rediss://) is not available: this "
				"build has no TLS");
}

int relay__hr_tls_attach(hr_backend *b, redisAsyncContext *ac,
			 const char *host)
{
	(void)ac;
	(void)host;
	relay__hr_set_err(b, "TLS (rediss://) is not available: this build "
			  "has no TLS");
	return -1;
}

void relay__hr_tls_explain(hr_backend *b)
{
	(void)b;
}

void relay__hr_tls_free(hr_backend *b)
{
	(void)b;
}

#endif
