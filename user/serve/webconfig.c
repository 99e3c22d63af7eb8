// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * webconfig.c - serve --web.config.file (serve/serve.h): exporter-toolkit's web
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
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <yaml.h>
#include "serve/serve.h"

#define WEB_FILE_MAX (1u << 20) /* a configuration, a certificate chain or a key: far less */
#define BCRYPT_LEN 60
#define BCRYPT_MAX_PASSWORD 72
#define BCRYPT_MIN_COST 4
#define BCRYPT_MAX_COST 31
#define BCRYPT_PROBE_COST 8 /* about 17 ms on the EPYC of bench/RESULTS.md */

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

/*
 * Why h is not a bcrypt hash ($2a$, $2b$ or $2y$, a two-digit cost from 04 to
 * 31, '$', 53 characters of bcrypt's base 64), in buf; NULL if it is one.
 */
static const char *bcrypt_fault(const char *h, char *buf, size_t len)
{
	static const char b64[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	size_t n = strlen(h);
	int cost;

	if (strncmp(h, "$2", 2) || !h[2] || !strchr("aby", h[2]) || h[3] != '$' || h[4] < '0' || h[4] > '9' ||
	    h[5] < '0' || h[5] > '9' || h[6] != '$')
		return "not a bcrypt hash ($2y$, $2b$ or $2a$, a cost, 60 characters; docs/export.md says how to "
		       "make one)";
	cost = (h[4] - '0') * 10 + (h[5] - '0');
	if (cost < BCRYPT_MIN_COST || cost > BCRYPT_MAX_COST) {
		snprintf(buf, len, "the bcrypt cost %.2s is out of range (04 to 31)", h + 4);
		return buf;
	}
	if (n != BCRYPT_LEN) {
		snprintf(buf, len, "not a bcrypt hash: %zu characters, where bcrypt's are 60", n);
		return buf;
	}
	n = 7 + strspn(h + 7, b64);
	if (n != BCRYPT_LEN) {
		snprintf(buf, len, "not a bcrypt hash: '%c' (character %zu) is not in bcrypt's base 64", h[n], n + 1);
		return buf;
	}
	return NULL;
}

static int bcrypt_cost(const char *h)
{
	return (h[4] - '0') * 10 + (h[5] - '0');
}

/*
 * Milliseconds a check of a hash of cost takes here: one bcrypt of cost
 * BCRYPT_PROBE_COST timed, doubled for each step of cost above it. -1 if it
 * could not be timed.
 */
static double bcrypt_ms(struct crypt_data *cd, int cost)
{
	char setting[CRYPT_GENSALT_OUTPUT_SIZE];
	struct timespec a, b;
	const char *out;

	if (!crypt_gensalt_rn("$2b$", BCRYPT_PROBE_COST, NULL, 0, setting, sizeof(setting)))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	out = crypt_rn("a password no one has", setting, cd, sizeof(*cd));
	clock_gettime(CLOCK_MONOTONIC, &b);
	explicit_bzero(cd, sizeof(*cd));
	if (!out)
		return -1;
	return ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6) *
	       (double)(1u << (cost - BCRYPT_PROBE_COST));
}

/*
 * A warning in c->warning for the costliest hash (at line) if a check of it
 * takes over WEB_BCRYPT_SLOW_MS here: every wrong password costs that much.
 */
static int warn_cost(struct loader *l, const yaml_node_t *at, const char *user, int cost)
{
	struct web_config *c = l->c;
	double ms;

	if (cost <= BCRYPT_PROBE_COST + 2)
		return 0; /* cheap on any machine: not worth the time of a probe */
	ms = bcrypt_ms(c->crypt, cost);
	if (ms < WEB_BCRYPT_SLOW_MS)
		return 0;
	if (asprintf(&c->warning,
		     "%s:%zu: basic_auth_users: user \"%s\": a bcrypt of cost %d takes about %.1f s here, and every "
		     "request with a wrong password costs one (checked one at a time, %u per address per minute); "
		     "a cost of 10 to 12 is usual (docs/export.md)",
		     c->path, at->start_mark.line + 1, user, cost, ms / 1e3, WEB_AUTH_FAILURES) < 0) {
		c->warning = NULL;
		return verror(l->err, -ENOMEM, "out of memory");
	}
	return 0;
}

static int load_users(struct loader *l, const yaml_node_t *m)
{
	const yaml_node_t *costliest_at = NULL;
	struct web_config *c = l->c;
	size_t n, costliest = 0;
	int e, max_cost = 0;

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
		const char *name = (const char *)k->data.scalar.value, *hash = NULL, *fault;
		struct web_user *u = &c->users[c->nr_users];
		char why[160];
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
		fault = bcrypt_fault(hash, why, sizeof(why));
		cs = crypt_checksalt(hash);
		if (!fault && (cs == CRYPT_SALT_INVALID || cs == CRYPT_SALT_METHOD_DISABLED))
			fault = "not a bcrypt hash libcrypt accepts";
		if (fault)
			return bad(l, v, "basic_auth_users: user \"%s\": %s", name, fault);
		if (bcrypt_cost(hash) > max_cost) {
			max_cost = bcrypt_cost(hash);
			costliest = c->nr_users;
			costliest_at = v;
		}
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
		return warn_cost(l, costliest_at, c->users[costliest].name, max_cost);
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
	free(c->warning);
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

int web_basic_decode(const char *value, char **decoded, size_t *len, size_t *colon)
{
	gnutls_datum_t in, out = {0};
	const char *b64;
	char *sep;

	*decoded = NULL;
	*len = *colon = 0;
	/* RFC 7235: the scheme in any case, one or more spaces, the token68 */
	if (!value || strncasecmp(value, "Basic", 5) || (value[5] != ' ' && value[5] != '\t'))
		return -EINVAL;
	for (b64 = value + 5; *b64 == ' ' || *b64 == '\t'; b64++)
		;
	in.data = (unsigned char *)b64;
	in.size = (unsigned int)strcspn(b64, " \t");
	if (!in.size || b64[in.size] || gnutls_base64_decode2(&in, &out) < 0)
		return -EINVAL;
	sep = memchr(out.data, ':', out.size);
	if (!sep) {
		web_basic_free((char *)out.data, out.size);
		return -EINVAL;
	}
	*decoded = (char *)out.data;
	*len = out.size;
	*colon = (size_t)(sep - *decoded);
	return 0;
}

void web_basic_free(char *decoded, size_t len)
{
	if (!decoded)
		return;
	explicit_bzero(decoded, len);
	gnutls_free(decoded);
}

enum web_verdict web_check_begin(struct web_config *c, const char *user, size_t user_len, const char *password,
				 size_t len, struct web_check *k)
{
	struct web_user *u = NULL;

	memset(k, 0, sizeof(*k));
	if (!c->nr_users)
		return WEB_ALLOWED;
	for (size_t i = 0; i < c->nr_users; i++)
		if (strlen(c->users[i].name) == user_len && !memcmp(c->users[i].name, user, user_len))
			u = &c->users[i];
	/*
	 * bcrypt reads a C string of at most 72 bytes: a password with a NUL or
	 * longer is one no hash can be of. Refused without a bcrypt; that tells
	 * nothing about users or passwords.
	 */
	if (memchr(password, '\0', len) || len > BCRYPT_MAX_PASSWORD)
		return WEB_REFUSED;
	if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, c->mac_key, sizeof(c->mac_key), password, len, k->mac) < 0)
		return WEB_REFUSED;
	if (u && u->verified && same(k->mac, u->verified_mac, sizeof(k->mac))) {
		explicit_bzero(k->mac, sizeof(k->mac));
		return WEB_ALLOWED;
	}
	/* an unknown user costs a bcrypt as well (the first user's hash): timing tells no names */
	k->user = u;
	k->hash = strdup(u ? u->hash : c->users[0].hash);
	k->password = strndup(password, len);
	k->len = len;
	if (!k->hash || !k->password) {
		web_check_end(k, false);
		return WEB_REFUSED;
	}
	return WEB_NEEDS_BCRYPT;
}

bool web_check_bcrypt(const struct web_check *k, struct crypt_data *cd)
{
	const char *out = crypt_rn(k->password, k->hash, cd, sizeof(*cd));
	bool ok = k->user && out && strlen(out) == BCRYPT_LEN && same(out, k->hash, BCRYPT_LEN);

	explicit_bzero(cd, sizeof(*cd));
	return ok;
}

void web_check_end(struct web_check *k, bool ok)
{
	if (ok && k->user) {
		memcpy(k->user->verified_mac, k->mac, sizeof(k->mac));
		k->user->verified = true;
	}
	if (k->password)
		explicit_bzero(k->password, k->len);
	free(k->password);
	free(k->hash);
	explicit_bzero(k, sizeof(*k));
}

bool web_config_check(struct web_config *c, const char *user, const char *password)
{
	struct web_check k;
	bool ok;

	switch (web_check_begin(c, user, strlen(user), password, strlen(password), &k)) {
	case WEB_ALLOWED:
		return true;
	case WEB_REFUSED:
		return false;
	case WEB_NEEDS_BCRYPT:
		break;
	}
	ok = web_check_bcrypt(&k, c->crypt);
	web_check_end(&k, ok);
	return ok;
}
