// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * webconfig.c - serve --web.config.file (live.h): exporter-toolkit's web
 * configuration, parsed with libyaml, its certificate and key checked with
 * GnuTLS, its passwords checked with libcrypt's bcrypt.
 */
#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <yaml.h>
#include "live/live.h"

#define WEB_FILE_MAX (1u << 20) /* a configuration, a certificate chain or a key: far less */
#define BCRYPT_LEN 60
#define BCRYPT_MAX_PASSWORD 72

/* What a file holds, NUL-terminated (a file with a NUL in it is refused: -EILSEQ). */
static int read_text(const char *path, char **out, size_t *len)
{
	size_t n = 0, cap = 4096;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC), e = 0;
	ssize_t r;

	*out = NULL;
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	while (buf) {
		if (cap - n < 2) {
			char *nb = cap >= WEB_FILE_MAX ? NULL : realloc(buf, cap * 2);

			if (!nb) {
				e = cap >= WEB_FILE_MAX ? -EFBIG : -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (!buf)
		return -ENOMEM;
	if (!e && memchr(buf, '\0', n))
		e = -EILSEQ;
	if (e) {
		explicit_bzero(buf, n);
		free(buf);
		return e;
	}
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

struct loader {
	struct web_config *c;
	yaml_document_t doc;
	struct vcpustat_error *err;
};

/* "FILE:LINE: what" for node n (libyaml counts lines from 0). */
__attribute__((format(printf, 3, 4))) static int bad(struct loader *l, const yaml_node_t *n, const char *fmt, ...)
{
	char what[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return verror(l->err, -EINVAL, "%s:%zu: %s", l->c->path, n->start_mark.line + 1, what);
}

static yaml_node_t *node(struct loader *l, int i)
{
	return yaml_document_get_node(&l->doc, i);
}

/* An empty value, ~ or null (plain, untagged): the key might as well be absent. */
static bool is_null(const yaml_node_t *n)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	v = (const char *)n->data.scalar.value;
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

/* The string of a scalar; what names it in messages. */
static int scalar(struct loader *l, const yaml_node_t *n, const char *what, const char **out)
{
	if (n->type != YAML_SCALAR_NODE)
		return bad(l, n, "%s: expected a string, not a %s", what,
			   n->type == YAML_MAPPING_NODE ? "mapping" : "list");
	if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
		return bad(l, n, "%s: a NUL character in the string", what);
	*out = is_null(n) ? "" : (const char *)n->data.scalar.value;
	return 0;
}

/* Is the key k of the mapping m (pairs before p) there twice? Go's strict YAML refuses it too. */
static int no_duplicate(struct loader *l, const yaml_node_t *m, const yaml_node_pair_t *p, const char *where)
{
	const char *k = (const char *)node(l, p->key)->data.scalar.value;

	for (const yaml_node_pair_t *q = m->data.mapping.pairs.start; q < p; q++) {
		const yaml_node_t *qk = node(l, q->key);

		if (qk->type == YAML_SCALAR_NODE && !strcmp((const char *)qk->data.scalar.value, k))
			return bad(l, node(l, p->key), "%s%s%s is there twice (first on line %zu)", where,
				   *where ? "." : "", k, qk->start_mark.line + 1);
	}
	return 0;
}

/* Each pair of mapping m with a string key: 0, or the error of the first bad key. */
static int check_keys(struct loader *l, const yaml_node_t *m, const char *where)
{
	for (const yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = node(l, p->key);
		const char *s;
		int e = scalar(l, k, *where ? where : "a key", &s);

		if (e)
			return e;
		e = no_duplicate(l, m, p, where);
		if (e)
			return e;
	}
	return 0;
}

static bool in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

/* dir of the configuration file + name, unless name is absolute (exporter-toolkit does the same). */
static char *resolve(const char *config, const char *name)
{
	const char *slash = strrchr(config, '/');
	char *p;

	if (name[0] == '/' || !slash)
		return strdup(name);
	if (asprintf(&p, "%.*s/%s", (int)(slash - config), config, name) < 0)
		return NULL;
	return p;
}

static const char *const tls_unsupported[] = {
    "cert",
    "key",
    "client_auth_type",
    "client_ca_file",
    "client_ca",
    "client_allowed_sans",
    "min_version",
    "max_version",
    "cipher_suites",
    "curve_preferences",
    "prefer_server_cipher_suites",
    NULL,
};

/* Read the certificate and key files named at cert and key, and check that they go together. */
static int load_tls_files(struct loader *l, const yaml_node_t *cert, const yaml_node_t *key)
{
	struct web_config *c = l->c;
	gnutls_certificate_credentials_t cred = NULL;
	gnutls_x509_crt_t *crts = NULL;
	gnutls_x509_privkey_t pk = NULL;
	gnutls_datum_t cd, kd;
	unsigned int nr_crts = 0;
	size_t cert_len, key_len;
	int e;

	e = read_text(c->cert_file, &c->cert_pem, &cert_len);
	if (e)
		return bad(l, cert, "cert_file %s: cannot read it: %s", c->cert_file,
			   e == -EILSEQ ? "a NUL byte in it (PEM expected)" : strerror(-e));
	e = read_text(c->key_file, &c->key_pem, &key_len);
	if (e)
		return bad(l, key, "key_file %s: cannot read it: %s", c->key_file,
			   e == -EILSEQ ? "a NUL byte in it (PEM expected)" : strerror(-e));
	cd = (gnutls_datum_t){.data = (unsigned char *)c->cert_pem, .size = (unsigned int)cert_len};
	kd = (gnutls_datum_t){.data = (unsigned char *)c->key_pem, .size = (unsigned int)key_len};
	e = gnutls_x509_crt_list_import2(&crts, &nr_crts, &cd, GNUTLS_X509_FMT_PEM, 0);
	if (e < 0)
		return bad(l, cert, "cert_file %s: not a PEM certificate (%s)", c->cert_file, gnutls_strerror(e));
	for (unsigned int i = 0; i < nr_crts; i++)
		gnutls_x509_crt_deinit(crts[i]);
	gnutls_free(crts);
	e = gnutls_x509_privkey_init(&pk);
	if (e < 0)
		return verror(l->err, -ENOMEM, "%s: %s", c->path, gnutls_strerror(e));
	e = gnutls_x509_privkey_import2(pk, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
	gnutls_x509_privkey_deinit(pk);
	if (e < 0)
		return bad(l, key, "key_file %s: not an unencrypted PEM private key (%s)", c->key_file,
			   gnutls_strerror(e));
	/* what libmicrohttpd will do, where a mismatch is one clear sentence rather than failed handshakes */
	e = gnutls_certificate_allocate_credentials(&cred);
	if (e < 0)
		return verror(l->err, -ENOMEM, "%s: %s", c->path, gnutls_strerror(e));
	e = gnutls_certificate_set_x509_key_mem(cred, &cd, &kd, GNUTLS_X509_FMT_PEM);
	gnutls_certificate_free_credentials(cred);
	if (e == GNUTLS_E_CERTIFICATE_KEY_MISMATCH)
		return bad(l, cert, "the certificate of cert_file %s does not match the private key of key_file %s",
			   c->cert_file, c->key_file);
	if (e < 0)
		return bad(l, cert, "cert_file %s with key_file %s: GnuTLS cannot use them: %s", c->cert_file,
			   c->key_file, gnutls_strerror(e));
	return 0;
}

static int load_tls(struct loader *l, const yaml_node_t *at, const yaml_node_t *m)
{
	const yaml_node_t *cert = NULL, *key = NULL;
	const char *cert_name = "", *key_name = "";
	struct web_config *c = l->c;
	int e;

	if (is_null(m))
		return 0;
	if (m->type != YAML_MAPPING_NODE)
		return bad(l, m, "tls_server_config: expected a mapping (cert_file, key_file)");
	e = check_keys(l, m, "tls_server_config");
	if (e)
		return e;
	for (const yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = node(l, p->key), *v = node(l, p->value);
		const char *name = (const char *)k->data.scalar.value;

		if (!strcmp(name, "cert_file")) {
			e = scalar(l, v, "tls_server_config.cert_file", &cert_name);
			cert = v;
		} else if (!strcmp(name, "key_file")) {
			e = scalar(l, v, "tls_server_config.key_file", &key_name);
			key = v;
		} else if (in_list(name, tls_unsupported)) {
			e = bad(l, k,
				"tls_server_config.%s: not supported by vcpustat serve (only cert_file and key_file; "
				"docs/export.md)",
				name);
		} else {
			e = bad(l, k, "unknown key \"%s\" in tls_server_config (known: cert_file, key_file)", name);
		}
		if (e)
			return e;
	}
	if (!*cert_name && !*key_name)
		return 0; /* as exporter-toolkit: no TLS */
	if (!*cert_name || !*key_name)
		return bad(l, at, "tls_server_config: %s without %s (both are needed)",
			   *cert_name ? "cert_file" : "key_file", *cert_name ? "key_file" : "cert_file");
	c->cert_file = resolve(c->path, cert_name);
	c->key_file = resolve(c->path, key_name);
	if (!c->cert_file || !c->key_file)
		return verror(l->err, -ENOMEM, "out of memory");
	return load_tls_files(l, cert, key);
}

/* $2a$, $2b$ or $2y$, a two-digit cost from 04 to 31, '$', 53 characters of bcrypt's base 64. */
static bool bcrypt_shaped(const char *h)
{
	static const char b64[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	int cost;

	if (strlen(h) != BCRYPT_LEN || strncmp(h, "$2", 2) || !strchr("aby", h[2]) || h[3] != '$' || h[4] < '0' ||
	    h[4] > '9' || h[5] < '0' || h[5] > '9' || h[6] != '$')
		return false;
	cost = (h[4] - '0') * 10 + (h[5] - '0');
	if (cost < 4 || cost > 31)
		return false;
	return strspn(h + 7, b64) == BCRYPT_LEN - 7;
}

static int load_users(struct loader *l, const yaml_node_t *m)
{
	struct web_config *c = l->c;
	size_t n;
	int e;

	if (is_null(m))
		return 0;
	if (m->type != YAML_MAPPING_NODE)
		return bad(l, m, "basic_auth_users: expected a mapping of user names to bcrypt hashes");
	e = check_keys(l, m, "basic_auth_users");
	if (e)
		return e;
	n = (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start);
	c->users = calloc(n ? n : 1, sizeof(*c->users));
	if (!c->users)
		return verror(l->err, -ENOMEM, "out of memory");
	for (const yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = node(l, p->key), *v = node(l, p->value);
		const char *name = (const char *)k->data.scalar.value, *hash;
		struct web_user *u = &c->users[c->nr_users];
		int cs;

		if (!*name)
			return bad(l, k, "basic_auth_users: an empty user name");
		if (strchr(name, ':'))
			return bad(l, k, "basic_auth_users: user \"%s\": a user name cannot hold ':' (HTTP basic auth)",
				   name);
		e = scalar(l, v, "basic_auth_users", &hash);
		if (e)
			return e;
		if (!*hash)
			return bad(l, v, "basic_auth_users: user \"%s\" has no password hash", name);
		cs = crypt_checksalt(hash);
		if (!bcrypt_shaped(hash) || cs == CRYPT_SALT_INVALID || cs == CRYPT_SALT_METHOD_DISABLED)
			return bad(
			    l, v,
			    "basic_auth_users: user \"%s\": not a bcrypt hash ($2y$, $2b$ or $2a$, 60 characters; "
			    "docs/export.md says how to make one)",
			    name);
		u->name = strdup(name);
		u->hash = strdup(hash);
		c->nr_users++;
		if (!u->name || !u->hash)
			return verror(l->err, -ENOMEM, "out of memory");
	}
	if (c->nr_users) {
		c->crypt = calloc(1, sizeof(*c->crypt));
		if (!c->crypt || gnutls_rnd(GNUTLS_RND_KEY, c->mac_key, sizeof(c->mac_key)) < 0)
			return verror(l->err, -ENOMEM, "%s: cannot set up the password checks", c->path);
	}
	return 0;
}

static int load_document(struct loader *l)
{
	static const char *const unsupported[] = {"http_server_config", NULL};
	const yaml_node_t *root = yaml_document_get_root_node(&l->doc), *tls = NULL, *tls_key = NULL;
	const yaml_node_t *users = NULL;
	int e;

	/*
	 * exporter-toolkit serves plain HTTP to all for an empty file; here a
	 * file that asks for nothing (one truncated by a failed write, say) is
	 * refused, as is one whose sections are all empty (below)
	 */
	if (!root || is_null(root))
		return verror(l->err, -EINVAL, "%s: empty: nothing configured (tls_server_config, basic_auth_users)",
			      l->c->path);
	if (root->type != YAML_MAPPING_NODE)
		return bad(l, root, "expected a mapping with tls_server_config and basic_auth_users");
	e = check_keys(l, root, "");
	if (e)
		return e;
	for (const yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = node(l, p->key);
		const char *name = (const char *)k->data.scalar.value;

		if (!strcmp(name, "tls_server_config")) {
			tls_key = k;
			tls = node(l, p->value);
		} else if (!strcmp(name, "basic_auth_users")) {
			users = node(l, p->value);
		} else if (in_list(name, unsupported)) {
			return bad(l, k, "%s: not supported by vcpustat serve (docs/export.md)", name);
		} else {
			return bad(l, k, "unknown key \"%s\" (known: tls_server_config, basic_auth_users)", name);
		}
	}
	if (tls) {
		e = load_tls(l, tls_key, tls);
		if (e)
			return e;
	}
	if (users) {
		e = load_users(l, users);
		if (e)
			return e;
	}
	if (!l->c->cert_pem && !l->c->nr_users)
		return bad(l, root, "nothing configured: no cert_file and key_file, no basic_auth_users");
	return 0;
}

int web_config_load(struct web_config *c, const char *path, struct vcpustat_error *err)
{
	struct loader l = {.c = c, .err = err};
	yaml_parser_t parser;
	yaml_document_t extra;
	char *text = NULL;
	size_t len;
	int e;

	memset(c, 0, sizeof(*c));
	c->path = strdup(path);
	if (!c->path)
		return verror(err, -ENOMEM, "out of memory");
	e = read_text(path, &text, &len);
	if (e) {
		verror(err, e, "%s: cannot read it: %s", path,
		       e == -EILSEQ ? "a NUL byte in it (a YAML text file expected)" : strerror(-e));
		web_config_free(c);
		return e;
	}
	if (!yaml_parser_initialize(&parser)) {
		free(text);
		web_config_free(c);
		return verror(err, -ENOMEM, "out of memory");
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &l.doc)) {
		char context[160] = "";

		if (parser.context)
			snprintf(context, sizeof(context), ", %s that starts on line %zu", parser.context,
				 parser.context_mark.line + 1);
		e = verror(err, -EINVAL, "%s:%zu: not valid YAML: %s (column %zu)%s", path,
			   parser.problem_mark.line + 1, parser.problem ? parser.problem : "a syntax error",
			   parser.problem_mark.column + 1, context);
		goto out_parser;
	}
	e = load_document(&l);
	if (!e && yaml_document_get_root_node(&l.doc)) {
		/* a second document: exporter-toolkit would read only the first; refuse rather than ignore */
		if (!yaml_parser_load(&parser, &extra)) {
			e = verror(err, -EINVAL, "%s:%zu: not valid YAML: %s", path, parser.problem_mark.line + 1,
				   parser.problem ? parser.problem : "error");
		} else {
			const yaml_node_t *r = yaml_document_get_root_node(&extra);

			if (r && !is_null(r))
				e = verror(err, -EINVAL, "%s:%zu: a second YAML document (one is expected)", path,
					   r->start_mark.line + 1);
			yaml_document_delete(&extra);
		}
	}
	yaml_document_delete(&l.doc);
out_parser:
	yaml_parser_delete(&parser);
	explicit_bzero(text, len);
	free(text);
	if (e)
		web_config_free(c);
	return e;
}

void web_config_free(struct web_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_users; i++) {
		free(c->users[i].name);
		free(c->users[i].hash);
	}
	free(c->users);
	if (c->key_pem)
		explicit_bzero(c->key_pem, strlen(c->key_pem));
	free(c->key_pem);
	free(c->cert_pem);
	free(c->cert_file);
	free(c->key_file);
	free(c->path);
	if (c->crypt)
		explicit_bzero(c->crypt, sizeof(*c->crypt));
	free(c->crypt);
	explicit_bzero(c, sizeof(*c));
}

/* a and b equal, in a time that depends on their length only */
static bool same(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

bool web_config_check(struct web_config *c, const char *user, const char *password)
{
	struct web_user *u = NULL;
	unsigned char mac[32];
	size_t len = strlen(password);
	const char *out;
	bool ok;

	if (!c->nr_users)
		return true;
	for (size_t i = 0; i < c->nr_users; i++)
		if (!strcmp(c->users[i].name, user))
			u = &c->users[i];
	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, c->mac_key, sizeof(c->mac_key), password, len, mac) < 0)
		return false;
	if (u && u->verified && same(mac, u->verified_mac, sizeof(mac)))
		return true;
	/* an unknown user or an over-long password costs a bcrypt as well */
	out = crypt_rn(password, u ? u->hash : c->users[0].hash, c->crypt, sizeof(*c->crypt));
	ok = u && len <= BCRYPT_MAX_PASSWORD && out && strlen(out) == BCRYPT_LEN && same(out, u->hash, BCRYPT_LEN);
	explicit_bzero(c->crypt, sizeof(*c->crypt));
	if (ok) {
		memcpy(u->verified_mac, mac, sizeof(mac));
		u->verified = true;
	}
	explicit_bzero(mac, sizeof(mac));
	return ok;
}
