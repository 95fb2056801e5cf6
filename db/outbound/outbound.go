package outbound

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/smtp"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/seckill/seckill/db/rdb"
)

// Timeouts of one external delivery: a slow endpoint holds one sender for
// at most this long, never the whole fan-out.
const (
	WebhookTimeout = 5 * time.Second
	SMTPTimeout    = 15 * time.Second
)

// SignatureHeader carries "sha256=<hex HMAC-SHA256 of the body>".
const SignatureHeader = "X-Seckill-Signature"

// Key is the configured WEBHOOK_SECRET, or else a key derived from the
// session secret (so restarts keep signing with the same key).
func Key(configured string, sessionSecret []byte) []byte {
	return DeriveKey(configured, sessionSecret, "seckill webhook signing key")
}

// DeriveKey is a configured signing secret, or else a key derived from the
// session secret for one purpose, so each purpose (webhooks, the payment
// gateway's callback) signs with a key of its own that restarts keep.
func DeriveKey(configured string, sessionSecret []byte, purpose string) []byte {
	if configured != "" {
		return []byte(configured)
	}
	m := hmac.New(sha256.New, sessionSecret)
	m.Write([]byte(purpose))
	return []byte(hex.EncodeToString(m.Sum(nil)))
}

// Sign returns the signature header value of body under secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// deliveryError is a failed delivery; a permanent one is not retried.
type deliveryError struct {
	err       error
	permanent bool
}

func (e *deliveryError) Error() string { return e.err.Error() }
func (e *deliveryError) Unwrap() error { return e.err }

// PermanentError is a failure that no retry can mend (no sender for a channel, a refused address).
func PermanentError(err error) error { return &deliveryError{err: err, permanent: true} }

// Permanent reports whether a failed delivery must not be retried.
func Permanent(err error) bool {
	var de *deliveryError
	return errors.As(err, &de) && de.permanent
}

// Client returns a client that does not follow redirects and,
// unless private addresses are allowed, connects only to addresses
// GlobalUnicast accepts, whatever the name resolves to at sending time. It
// has no proxy: a proxy would connect for it, past that check.
// Webhook posts signed deliveries. AllowPrivate lets it reach loopback and
// private addresses (tests, trusted networks); Secret signs every body.
type Webhook struct {
	Secret       []byte
	AllowPrivate bool
}

func (w Webhook) Client() *http.Client {
	dialer := Dialer(w.AllowPrivate)
	return &http.Client{
		Timeout: WebhookTimeout,
		Transport: &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second,
			TLSHandshakeTimeout: WebhookTimeout, MaxResponseHeaderBytes: 64 << 10},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Post sends one signed reminder. 5xx, 429 and network errors may be
// retried; any other non-2xx answer (redirects too) and an address the
// dialer refuses are permanent.
func (w Webhook) Post(ctx context.Context, client *http.Client, target, deliveryID string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return &deliveryError{err: err, permanent: true}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "seckill-webhook/1")
	req.Header.Set(SignatureHeader, Sign(w.Secret, body))
	req.Header.Set("X-Seckill-Delivery", deliveryID)
	res, err := client.Do(req)
	if err != nil {
		// An address refused at dial time stays refused: retrying cannot help.
		return &deliveryError{err: fmt.Errorf("post webhook: %w", err), permanent: errors.Is(err, ErrNotGlobal)}
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return nil
	case res.StatusCode >= 500 || res.StatusCode == http.StatusTooManyRequests:
		return &deliveryError{err: fmt.Errorf("webhook answered %s", res.Status)}
	}
	return &deliveryError{err: fmt.Errorf("webhook answered %s", res.Status), permanent: true}
}

// SendMail delivers one plain-text message through the server at smtpURL:
// smtp://[user:pass@]host[:587] (STARTTLS when offered) or smtps://host[:465];
// ?from= sets the sender.
func SendMail(ctx context.Context, smtpURL, to, subject, body string) error {
	u, err := url.Parse(smtpURL)
	if err != nil {
		return &deliveryError{err: fmt.Errorf("SMTP_URL: %w", err), permanent: true}
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "587"
		if u.Scheme == "smtps" {
			port = "465"
		}
	}
	from := u.Query().Get("from")
	if from == "" {
		name, _ := os.Hostname()
		if name == "" {
			name = "localhost"
		}
		from = "seckill@" + name
	}
	deadline := time.Now().Add(SMTPTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	dialer := &net.Dialer{Deadline: deadline}
	addr := net.JoinHostPort(host, port)
	var conn net.Conn
	if u.Scheme == "smtps" {
		conn, err = (&tls.Dialer{NetDialer: dialer, Config: &tls.Config{ServerName: host}}).DialContext(ctx, "tcp", addr)
	} else {
		conn, err = dialer.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return &deliveryError{err: fmt.Errorf("connect to mail server: %w", err)}
	}
	defer conn.Close()
	conn.SetDeadline(deadline)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return mailError(err)
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok && u.Scheme == "smtp" {
		if err := c.StartTLS(&tls.Config{ServerName: host}); err != nil {
			return mailError(err)
		}
	}
	if u.User != nil {
		pass, _ := u.User.Password()
		if err := c.Auth(smtp.PlainAuth("", u.User.Username(), pass, host)); err != nil {
			return mailError(err)
		}
	}
	if err := c.Mail(from); err != nil {
		return mailError(err)
	}
	if err := c.Rcpt(to); err != nil {
		return mailError(err)
	}
	w, err := c.Data()
	if err != nil {
		return mailError(err)
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s@seckill>\r\n", from, to,
		mime.QEncoding.Encode("utf-8", subject), time.Now().Format(time.RFC1123Z), rdb.NewRequestID())
	msg.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	msg.WriteString(strings.ReplaceAll(body, "\n", "\r\n"))
	if _, err := io.WriteString(w, msg.String()); err != nil {
		return mailError(err)
	}
	if err := w.Close(); err != nil {
		return mailError(err)
	}
	return c.Quit()
}

// mailError marks 5xx SMTP answers permanent; anything else may be retried.
func mailError(err error) error {
	var te *textproto.Error
	return &deliveryError{err: fmt.Errorf("smtp: %w", err), permanent: errors.As(err, &te) && te.Code >= 500}
}
