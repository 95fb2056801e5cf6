package app

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/db/stripe"
	"github.com/seckill/seckill/web/ratelimit"
)

// Config is every setting of the binary; each comes from an environment
// variable or the flag of the same name (flags win).
type Config struct {
	Addr                string
	RedisURL            string
	DatabaseURL         string // PostgreSQL (postgres://…); "" keeps SQLite at DBPath
	DBPath              string
	OrderTTL            time.Duration
	FlushInterval       time.Duration
	SessionSecret       string
	AdminUsername       string
	AdminPassword       string
	SMTPURL             string
	WebhookSecret       string
	PaymentSecret       string // keys the payment gateway callback's signature; "" derives it from the session secret
	WebhookAllowPrivate bool
	RaffleBeaconURL     string // a drand-style beacon mixed into raffle draws; "" for none
	ReminderRetryDelay  time.Duration
	Demo                bool
	// Abuse limits (docs/OPERATIONS.md, "Abuse limits"): zero rates are off.
	RateGrab       ratelimit.Rate
	RateAuth       ratelimit.Rate
	RateIP         ratelimit.Rate
	TrustedProxies string // comma-separated CIDRs whose X-Forwarded-For is believed
	MetricsToken   string
	// Durability across a failover (docs/OPERATIONS.md, "Replicas and WAIT: a 201 is a promise"): how many replicas hold a
	// change before it is acknowledged ("auto": one where the master has
	// one), and how long to wait for them before answering 503.
	RedisWaitReplicas string
	RedisWaitTimeout  time.Duration
	// Payments with a provider (Stripe): unset STRIPE_SECRET_KEY keeps the simulated pay.
	StripeSecretKey     string
	StripeWebhookSecret string
	StripeAPIBase       string // "" is Stripe's own API
	PaymentMethods      string // comma-separated: card, alipay, wechat_pay
	PaymentCurrency     string // ISO 4217, lower case
}

// DefaultConfig is what runs when nothing is set.
func DefaultConfig() Config {
	return Config{
		Addr:          ":3000",
		DBPath:        "data/seckill.db",
		OrderTTL:      30 * time.Minute,
		FlushInterval: time.Second,
		AdminUsername: "admin",
		RateGrab:      ratelimit.Rate{N: 10, Per: time.Second},
		RateAuth:      ratelimit.Rate{N: 10, Per: time.Minute},
		RateIP:        ratelimit.Rate{N: 300, Per: time.Second},

		RedisWaitReplicas: "auto",
		RedisWaitTimeout:  100 * time.Millisecond,

		PaymentMethods:  "card,alipay,wechat_pay",
		PaymentCurrency: "cny",
	}
}

// WaitReplicas is REDIS_WAIT_REPLICAS for the pipeliner: rdb.AutoReplicas or a number.
func (c Config) WaitReplicas() int {
	if c.RedisWaitReplicas == "auto" {
		return rdb.AutoReplicas
	}
	n, _ := strconv.Atoi(c.RedisWaitReplicas)
	return n
}

// ParseConfig reads the environment (through getenv) and then args, and validates the result.
func ParseConfig(args []string, getenv func(string) string) (Config, error) {
	c := DefaultConfig()
	fs := flag.NewFlagSet("seckill", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var errs []string
	// A bad environment value is an error only if no flag replaces it: flags win.
	envErrs := map[string]string{} // flag name → what is wrong with its variable
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
				envErrs[name] = fmt.Sprintf("%s=%q is not a duration (like 30m or 1s)", env, v)
			}
			*p = d
		}
		fs.DurationVar(p, name, *p, usage+" ($"+env+")")
	}
	boolean := func(p *bool, name, env, usage string) {
		if v := getenv(env); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				envErrs[name] = fmt.Sprintf("%s=%q is not true or false", env, v)
			}
			*p = b
		}
		fs.BoolVar(p, name, *p, usage+" ($"+env+")")
	}
	rate := func(p *ratelimit.Rate, name, env, usage string) {
		if v := getenv(env); v != "" {
			r, err := ratelimit.ParseRate(v)
			if err != nil {
				envErrs[name] = fmt.Sprintf("%s: %v", env, err)
			}
			*p = r
		}
		fs.Func(name, usage+" ($"+env+"; default "+p.String()+")", func(v string) error {
			r, err := ratelimit.ParseRate(v)
			*p = r
			return err
		})
	}
	str(&c.Addr, "addr", "ADDR", "listen address")
	str(&c.RedisURL, "redis-url", "REDIS_URL", "Redis URL; several hosts (redis://h1:7000,h2:7001,h3:7002) for a Redis Cluster; unset runs an embedded in-memory Redis")
	str(&c.DatabaseURL, "database-url", "DATABASE_URL", "PostgreSQL URL, like postgres://user:pass@host:5432/seckill; unset: SQLite at DB_PATH")
	str(&c.DBPath, "db-path", "DB_PATH", "SQLite database file (unless DATABASE_URL is set); the generated secrets are kept beside it")
	dur(&c.OrderTTL, "order-ttl", "ORDER_TTL", "how long an order may stay unpaid")
	dur(&c.FlushInterval, "flush-interval", "FLUSH_INTERVAL", "how often claims are flushed to the database")
	str(&c.SessionSecret, "session-secret", "SESSION_SECRET", "key for signed tokens; unset: generated and kept beside the database")
	str(&c.AdminUsername, "admin-username", "ADMIN_USERNAME", "bootstrap admin username")
	str(&c.AdminPassword, "admin-password", "ADMIN_PASSWORD", "bootstrap admin password; unset: generated and kept beside the database")
	str(&c.SMTPURL, "smtp-url", "SMTP_URL", "SMTP server for email reminders, like smtp://user:pass@host:587")
	str(&c.WebhookSecret, "webhook-secret", "WEBHOOK_SECRET", "key for webhook signatures; unset: derived from the session secret")
	str(&c.PaymentSecret, "payment-secret", "PAYMENT_SECRET", "key of the payment gateway callback's signature; unset: derived from the session secret")
	boolean(&c.WebhookAllowPrivate, "webhook-allow-private", "WEBHOOK_ALLOW_PRIVATE", "allow webhook URLs on non-global (loopback, private, reserved) addresses")
	str(&c.RaffleBeaconURL, "raffle-beacon-url", "RAFFLE_BEACON_URL", "a drand-style randomness beacon (HTTP API: /info, /public/{round}) whose round after entries close is mixed into each raffle's draw; unset: none")
	dur(&c.ReminderRetryDelay, "reminder-retry-delay", "REMINDER_RETRY_DELAY", "wait before retrying a failed email or webhook reminder, doubling each time; unset: 10s")
	boolean(&c.Demo, "demo", "DEMO", "seed demo data into an empty database")
	rate(&c.RateGrab, "rate-grab", "RATE_GRAB", "grabs per shopper, N/s or N/m, 0 = off")
	rate(&c.RateAuth, "rate-auth", "RATE_AUTH", "login and sign-up attempts per account and per client address, 0 = off")
	rate(&c.RateIP, "rate-ip", "RATE_IP", "API requests per client address, 0 = off")
	str(&c.TrustedProxies, "trusted-proxies", "TRUSTED_PROXIES", "comma-separated CIDRs whose X-Forwarded-For is believed; unset: none")
	str(&c.MetricsToken, "metrics-token", "METRICS_TOKEN", "bearer token that may read /metrics besides admins")
	str(&c.RedisWaitReplicas, "redis-wait-replicas", "REDIS_WAIT_REPLICAS", "replicas that must hold a grab, pay, cancel or refund before it is acknowledged: auto (1 where the master has a replica, else 0) or a number")
	dur(&c.RedisWaitTimeout, "redis-wait-timeout", "REDIS_WAIT_TIMEOUT", "how long to wait for those replicas before answering 503 unavailable")
	str(&c.StripeSecretKey, "stripe-secret-key", "STRIPE_SECRET_KEY", "Stripe secret key (sk_… or rk_…): shoppers pay through Stripe; unset: the simulated pay")
	str(&c.StripeWebhookSecret, "stripe-webhook-secret", "STRIPE_WEBHOOK_SECRET", "signing secret (whsec_…) of the Stripe webhook endpoint /api/payments/stripe, needed with STRIPE_SECRET_KEY; while rotating it: new,old")
	str(&c.StripeAPIBase, "stripe-api-base", "STRIPE_API_BASE", "Stripe API base URL; unset: Stripe's own (tests point it at stripe-mock)")
	str(&c.PaymentMethods, "payment-methods", "PAYMENT_METHODS", "payment methods offered through Stripe, comma-separated from card, alipay, wechat_pay")
	str(&c.PaymentCurrency, "payment-currency", "PAYMENT_CURRENCY", "currency of Stripe payments (ISO 4217, like cny)")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("%v\n%s", err, usage(fs))
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), usage(fs))
	}
	fs.Visit(func(f *flag.Flag) { delete(envErrs, f.Name) })
	for _, name := range slices.Sorted(maps.Keys(envErrs)) {
		errs = append(errs, envErrs[name])
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
		if err := rdb.CheckURL(c.RedisURL); err != nil {
			errs = append(errs, fmt.Sprintf("REDIS_URL=%q: %v", c.RedisURL, err))
		}
	}
	if c.DatabaseURL != "" {
		if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
			errs = append(errs, "DATABASE_URL must look like postgres://user:pass@host:5432/seckill")
		}
	}
	if strings.TrimSpace(c.DBPath) == "" {
		errs = append(errs, "DB_PATH must not be empty")
	} else if c.DatabaseURL == "" && (strings.Contains(c.DBPath, ":memory:") || strings.Contains(c.DBPath, "mode=memory")) {
		// The writer and the readers are separate connections: in memory each would get a database of its own.
		errs = append(errs, fmt.Sprintf("DB_PATH=%q: an in-memory database cannot be shared by the writer and the readers; give a file (a temporary folder will do)", c.DBPath))
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
	if _, err := ParseTrustedProxies(c.TrustedProxies); err != nil {
		errs = append(errs, fmt.Sprintf("TRUSTED_PROXIES=%q: %v", c.TrustedProxies, err))
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		errs = append(errs, "METRICS_TOKEN must be at least 16 characters")
	}
	if n, err := strconv.Atoi(c.RedisWaitReplicas); c.RedisWaitReplicas != "auto" && (err != nil || n < 0 || n > 16) {
		errs = append(errs, fmt.Sprintf("REDIS_WAIT_REPLICAS=%q must be auto or a number from 0 to 16", c.RedisWaitReplicas))
	}
	if c.RedisWaitTimeout < time.Millisecond || c.RedisWaitTimeout > 2*time.Second {
		errs = append(errs, fmt.Sprintf("REDIS_WAIT_TIMEOUT=%s must be between 1ms and 2s", c.RedisWaitTimeout))
	}
	if c.RaffleBeaconURL != "" {
		if u, err := url.Parse(c.RaffleBeaconURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Sprintf("RAFFLE_BEACON_URL=%q must be an http(s) URL, like https://api.drand.sh", c.RaffleBeaconURL))
		}
	}
	if c.SMTPURL != "" {
		if u, err := url.Parse(c.SMTPURL); err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Host == "" {
			errs = append(errs, fmt.Sprintf("SMTP_URL=%q must look like smtp://user:pass@host:587", c.SMTPURL))
		}
	}
	errs = append(errs, c.paymentErrors()...)
	return errs
}

// paymentMethodCurrencies are the currencies each payment method takes
// through Stripe (nil: any).
var paymentMethodCurrencies = map[string][]string{
	"card":       nil,
	"alipay":     {"aud", "cad", "cny", "eur", "gbp", "hkd", "jpy", "myr", "nzd", "sgd", "usd"},
	"wechat_pay": {"aud", "cad", "chf", "cny", "dkk", "eur", "gbp", "hkd", "jpy", "nok", "sek", "sgd", "usd"},
}

var currencyRE = regexp.MustCompile(`^[a-z]{3}$`)

// Methods is PAYMENT_METHODS as a list.
func (c Config) Methods() []string {
	var out []string
	for _, m := range strings.Split(c.PaymentMethods, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// paymentErrors checks the provider's settings: a key, its webhook secret
// and base URL belong together, and every method takes the currency.
func (c Config) paymentErrors() []string {
	var errs []string
	if c.StripeSecretKey != "" && !strings.HasPrefix(c.StripeSecretKey, "sk_") && !strings.HasPrefix(c.StripeSecretKey, "rk_") {
		errs = append(errs, "STRIPE_SECRET_KEY must be a Stripe secret or restricted key (sk_… or rk_…)")
	}
	switch {
	case c.StripeSecretKey == "" && c.StripeWebhookSecret != "":
		errs = append(errs, "STRIPE_WEBHOOK_SECRET is set without STRIPE_SECRET_KEY")
	case c.StripeSecretKey != "" && c.StripeWebhookSecret == "":
		errs = append(errs, "STRIPE_WEBHOOK_SECRET must be set with STRIPE_SECRET_KEY (the webhook endpoint's signing secret, whsec_…)")
	case c.StripeWebhookSecret != "":
		secrets := stripe.Secrets(c.StripeWebhookSecret)
		ok := len(secrets) > 0 && len(secrets) <= 2
		for _, s := range secrets {
			ok = ok && strings.HasPrefix(s, "whsec_")
		}
		if !ok {
			errs = append(errs, "STRIPE_WEBHOOK_SECRET must be a webhook signing secret (whsec_…), or while rotating it the new and the old one, comma-separated")
		}
	}
	if c.StripeAPIBase != "" {
		if c.StripeSecretKey == "" {
			errs = append(errs, "STRIPE_API_BASE is set without STRIPE_SECRET_KEY")
		} else if u, err := url.Parse(c.StripeAPIBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			errs = append(errs, fmt.Sprintf("STRIPE_API_BASE=%q must be an http(s) URL without a path, like https://api.stripe.com", c.StripeAPIBase))
		}
	}
	if !currencyRE.MatchString(c.PaymentCurrency) {
		errs = append(errs, fmt.Sprintf("PAYMENT_CURRENCY=%q must be a three-letter ISO 4217 code in lower case, like cny", c.PaymentCurrency))
	}
	methods := c.Methods()
	if len(methods) == 0 {
		errs = append(errs, "PAYMENT_METHODS must name at least one of card, alipay, wechat_pay")
	}
	seen := map[string]bool{}
	for _, m := range methods {
		cur, known := paymentMethodCurrencies[m]
		switch {
		case !known:
			errs = append(errs, fmt.Sprintf("PAYMENT_METHODS: %q is not one of card, alipay, wechat_pay", m))
		case seen[m]:
			errs = append(errs, fmt.Sprintf("PAYMENT_METHODS names %s twice", m))
		case cur != nil && currencyRE.MatchString(c.PaymentCurrency) && !slices.Contains(cur, c.PaymentCurrency):
			errs = append(errs, fmt.Sprintf("PAYMENT_METHODS: %s does not take PAYMENT_CURRENCY=%s (it takes %s)", m, c.PaymentCurrency, strings.Join(cur, ", ")))
		}
		seen[m] = true
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

// ParseTrustedProxies reads TRUSTED_PROXIES: comma-separated CIDRs or single addresses.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not an address or CIDR", f)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR like 10.0.0.0/8", f)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
