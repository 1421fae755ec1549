package egress

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Redacted replaces a credential's value in a capture record.
const Redacted = "REDACTED"

// credentialHeaders are never written to a capture file.
var credentialHeaders = map[string]bool{
	"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Set-Cookie": true,
	"X-Api-Key": true, "Api-Key": true, "X-Auth-Token": true, "X-Amz-Security-Token": true,
	"X-Csrf-Token": true, "X-Xsrf-Token": true,
}

// credentialWords mark a name (header, query parameter, JSON or form field)
// as a credential wherever they appear in it, once '-' is read as '_'
// (X-Stripe-Secret, X-Github-Token, access_token, client_secret …).
var credentialWords = []string{"auth", "token", "secret", "password", "passwd", "api_key", "apikey", "credential", "session",
	"signature", "private_key", "cookie", "jwt", "bearer"}

// credentialSuffixes are credentials on their own or as the last part of a
// longer name (sig, X-Amz-Sig; key, X-Stripe-Key); credentialNames only on
// their own (code is an OAuth code; country_code is not a credential).
var (
	credentialSuffixes = []string{"sig", "key"}
	credentialNames    = []string{"code", "pwd", "otp", "pin"}
)

// credentialName reports whether a name always has its value redacted.
func credentialName(name string) bool {
	lower := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	for _, w := range credentialWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	for _, n := range credentialSuffixes {
		if lower == n || strings.HasSuffix(lower, "_"+n) {
			return true
		}
	}
	return slices.Contains(credentialNames, lower)
}

// IsCredentialHeader reports whether a header is left out of captures.
func IsCredentialHeader(name string) bool {
	return credentialHeaders[http.CanonicalHeaderKey(name)] || credentialName(name)
}

// redactor decides which names are redacted: the credential names, and the
// manifest's capture.redact patterns.
type redactor struct{ extra []*regexp.Regexp }

func newRedactor(patterns []string) redactor {
	var r redactor
	for _, p := range patterns {
		parts := strings.Split(p, "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		r.extra = append(r.extra, regexp.MustCompile("(?i)^"+strings.Join(parts, ".*")+"$"))
	}
	return r
}

func (r redactor) name(n string) bool {
	if credentialName(n) {
		return true
	}
	for _, re := range r.extra {
		if re.MatchString(n) {
			return true
		}
	}
	return false
}

func (r redactor) header(n string) bool { return IsCredentialHeader(n) || r.name(n) }

// pairs redacts the values of a query string or form body in place of
// order: name=REDACTED. It returns the names redacted.
func (r redactor) pairs(raw string) (string, []string) {
	if raw == "" {
		return raw, nil
	}
	parts := strings.Split(raw, "&")
	var names []string
	for i, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if r.name(name) {
			parts[i] = k + "=" + Redacted
			names = append(names, name)
		}
	}
	return strings.Join(parts, "&"), names
}

// jsonField is a "name": value pair in JSON text, for bodies that do not
// parse (a body cut at the record cap): the value is a string (possibly cut
// off at the end) or a bare scalar.
var jsonField = regexp.MustCompile(`"((?:[^"\\]|\\.){1,128})"(\s*:\s*)("(?:[^"\\]|\\.)*(?:"|$)|[^\s,}\]]+)`)

// body redacts a UTF-8 body: JSON by structure (any depth; values of any
// type), a truncated JSON text by its "name": value pairs, a form body by
// its fields. It returns the body to record and the fields redacted.
func (r redactor) body(contentType, body string, complete bool) (string, []string) {
	mt, _, _ := mime.ParseMediaType(contentType)
	trimmed := strings.TrimSpace(body)
	looksJSON := strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[")
	switch {
	case mt == "application/x-www-form-urlencoded":
		return r.pairs(body)
	case looksJSON && complete:
		dec := json.NewDecoder(strings.NewReader(body))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil && !dec.More() {
			var names []string
			v = r.walk(v, "$", &names)
			if len(names) == 0 {
				return body, nil // unchanged, as sent
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if enc.Encode(v) == nil {
				return strings.TrimSuffix(buf.String(), "\n"), names
			}
		}
		fallthrough
	case looksJSON || strings.Contains(mt, "json"):
		var names []string
		out := jsonField.ReplaceAllStringFunc(body, func(m string) string {
			sub := jsonField.FindStringSubmatch(m)
			if !r.name(sub[1]) {
				return m
			}
			names = append(names, "$.."+sub[1])
			return `"` + sub[1] + `"` + sub[2] + `"` + Redacted + `"`
		})
		return out, names
	}
	return body, nil
}

func (r redactor) walk(v any, at string, names *[]string) any {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if r.name(k) {
				t[k] = Redacted
				*names = append(*names, at+"."+k)
				continue
			}
			t[k] = r.walk(t[k], at+"."+k, names)
		}
	case []any:
		for i := range t {
			t[i] = r.walk(t[i], at+"[]", names)
		}
	}
	return v
}

// minSecretSegment is the shortest path segment read as a credential.
const minSecretSegment = 16

// RedactPath replaces every path segment that looks like a credential
// rather than a name with REDACTED: at least 16 characters holding both
// letters and digits. Webhook URLs carry their secret in the path (Slack's
// /services/T…/B…/<token>, Discord's /api/webhooks/<id>/<token>, Telegram's
// /bot<id>:<token>/…); an all-digit id or a word stays, a UUID does not
// (erring on the side of the secret). It reports whether anything was
// replaced.
func RedactPath(p string) (string, bool) {
	segs := strings.Split(p, "/")
	changed := false
	for i, s := range segs {
		if secretSegment(s) {
			segs[i] = Redacted
			changed = true
		}
	}
	if !changed {
		return p, false
	}
	return strings.Join(segs, "/"), true
}

func secretSegment(s string) bool {
	if len(s) < minSecretSegment {
		return false
	}
	var letter, digit bool
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letter = true
		}
	}
	return letter && digit
}
