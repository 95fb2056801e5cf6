package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config is every setting of the binary; each comes from an environment
// variable or the flag of the same name (flags win).
type Config struct {
	Addr                string
	RedisURL            string
	DBPath              string
	OrderTTL            time.Duration
	FlushInterval       time.Duration
	SessionSecret       string
	AdminUsername       string
	AdminPassword       string
	SMTPURL             string
	WebhookSecret       string
	WebhookAllowPrivate bool
	ReminderRetryDelay  time.Duration
	Demo                bool
}

// DefaultConfig is what runs when nothing is set.
func DefaultConfig() Config {
	return Config{
		Addr:          ":3000",
		DBPath:        "data/seckill.db",
		OrderTTL:      30 * time.Minute,
		FlushInterval: time.Second,
		AdminUsername: "admin",
	}
}

// ParseConfig reads the environment (through getenv) and then args, and validates the result.
func ParseConfig(args []string, getenv func(string) string) (Config, error) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("seckill", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var errs []string
	str := func(p *string, name, env, usage string) {
		if v := getenv(env); v != "" {
			*p = v
		}
		fs.StringVar(p, name, *p, usage+" ($"+env+")")
	}
	dur := func(p *time.Duration, name, env, usage string) {
		if v := getenv(env); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s=%q is not a duration (like 30m or 1s)", env, v))
			}
			*p = d
		}
		fs.DurationVar(p, name, *p, usage+" ($"+env+")")
	}
	boolean := func(p *bool, name, env, usage string) {
		if v := getenv(env); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s=%q is not true or false", env, v))
			}
			*p = b
		}
		fs.BoolVar(p, name, *p, usage+" ($"+env+")")
	}
	str(&c.Addr, "addr", "ADDR", "listen address")
	str(&c.RedisURL, "redis-url", "REDIS_URL", "Redis URL; unset runs an embedded in-memory Redis")
	str(&c.DBPath, "db-path", "DB_PATH", "SQLite database file")
	dur(&c.OrderTTL, "order-ttl", "ORDER_TTL", "how long an order may stay unpaid")
	dur(&c.FlushInterval, "flush-interval", "FLUSH_INTERVAL", "how often claims are flushed to SQLite")
	str(&c.SessionSecret, "session-secret", "SESSION_SECRET", "key for signed tokens; unset: generated and kept beside the database")
	str(&c.AdminUsername, "admin-username", "ADMIN_USERNAME", "bootstrap admin username")
	str(&c.AdminPassword, "admin-password", "ADMIN_PASSWORD", "bootstrap admin password; unset: generated and kept beside the database")
	str(&c.SMTPURL, "smtp-url", "SMTP_URL", "SMTP server for email reminders, like smtp://user:pass@host:587")
	str(&c.WebhookSecret, "webhook-secret", "WEBHOOK_SECRET", "key for webhook signatures; unset: derived from the session secret")
	boolean(&c.WebhookAllowPrivate, "webhook-allow-private", "WEBHOOK_ALLOW_PRIVATE", "allow webhook URLs on private addresses")
	dur(&c.ReminderRetryDelay, "reminder-retry-delay", "REMINDER_RETRY_DELAY", "wait before retrying a failed email or webhook reminder, doubling each time; unset: 10s")
	boolean(&c.Demo, "demo", "DEMO", "seed demo data into an empty database")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("%v\n%s", err, usage(fs))
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), usage(fs))
	}
	errs = append(errs, c.validate()...)
	if len(errs) > 0 {
		return c, fmt.Errorf("bad configuration:\n  %s", strings.Join(errs, "\n  "))
	}
	return c, nil
}

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9_]{3,32}$`)

func (c Config) validate() []string {
	var errs []string
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Sprintf("ADDR=%q must be host:port, like :3000", c.Addr))
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		errs = append(errs, fmt.Sprintf("ADDR=%q has a bad port", c.Addr))
	}
	if c.RedisURL != "" {
		if _, err := redis.ParseURL(c.RedisURL); err != nil {
			errs = append(errs, fmt.Sprintf("REDIS_URL=%q: %v", c.RedisURL, err))
		}
	}
	if strings.TrimSpace(c.DBPath) == "" {
		errs = append(errs, "DB_PATH must not be empty")
	}
	if c.OrderTTL < time.Second {
		errs = append(errs, fmt.Sprintf("ORDER_TTL=%s must be at least 1s", c.OrderTTL))
	}
	if c.FlushInterval < 10*time.Millisecond || c.FlushInterval > time.Minute {
		errs = append(errs, fmt.Sprintf("FLUSH_INTERVAL=%s must be between 10ms and 1m", c.FlushInterval))
	}
	if c.ReminderRetryDelay != 0 && (c.ReminderRetryDelay < 10*time.Millisecond || c.ReminderRetryDelay > time.Hour) {
		errs = append(errs, fmt.Sprintf("REMINDER_RETRY_DELAY=%s must be between 10ms and 1h", c.ReminderRetryDelay))
	}
	if c.SessionSecret != "" && len(c.SessionSecret) < 16 {
		errs = append(errs, "SESSION_SECRET must be at least 16 characters")
	}
	if !usernameRE.MatchString(c.AdminUsername) {
		errs = append(errs, fmt.Sprintf("ADMIN_USERNAME=%q must be 3–32 letters, digits or underscores", c.AdminUsername))
	}
	if c.AdminPassword != "" && (len(c.AdminPassword) < 8 || len(c.AdminPassword) > 72) {
		errs = append(errs, "ADMIN_PASSWORD must be 8–72 bytes")
	}
	if c.SMTPURL != "" {
		if u, err := url.Parse(c.SMTPURL); err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Host == "" {
			errs = append(errs, fmt.Sprintf("SMTP_URL=%q must look like smtp://user:pass@host:587", c.SMTPURL))
		}
	}
	return errs
}

func usage(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("usage: seckill [serve|web|worker] [flags]\n")
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return b.String()
}
