# seckill — flash sales on Redis, SQLite and Asynq.
GO ?= go
DEMO ?= true

.PHONY: help run test test-cluster soak faults generate build bench lint

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

run: ## build (saying what it does), then run the whole app (web + worker + scheduler) on embedded defaults with demo data
	@echo "Building seckill into bin/seckill (the first build downloads the Go modules and compiles them: a few minutes; later builds take seconds)..."
	@$(GO) mod download -x 2>&1 | grep --line-buffered -E '^# get .*\.zip: 200' | sed -u -E 's|^# get https?://[^/]+/(.*)/@v/(.*)\.zip: 200.*|  downloaded \1 \2|'
	@echo "  compiling; each package is listed as it is built..."
	@$(GO) build -v -o bin/seckill ./cmd/seckill
	@echo "Starting seckill (DEMO=$(DEMO)): its address and the accounts to sign in with follow."
	DEMO=$(DEMO) ./bin/seckill serve

RACE ?= -race
test: ## run every test with the race detector (embedded Redis + SQLite; a real Redis when REDIS_URL is set, PostgreSQL when DATABASE_URL is); ./cmd/seckill in SHARDS processes (default 2)
	GO=$(GO) .ci/gotest $(RACE) -count=1 -timeout 45m

test-cluster: ## run every test on the Redis Cluster REDIS_URL lists, one package at a time, ./cmd/seckill's shards on the clusters SHARD_REDIS_URLS lists (README: the three test runs)
	@case "$(REDIS_URL)" in *,*) ;; *) echo "make test-cluster: set REDIS_URL to a Redis Cluster's hosts, redis://127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103"; exit 2;; esac
	GO=$(GO) .ci/gotest $(RACE) -count=1 -p 1 -timeout 45m

DURATION ?= 10m
soak: ## run only the model-based checker of the sale for DURATION (make soak DURATION=10m; make test runs it for about 20 s)
	SECKILL_SOAK=$(DURATION) $(GO) test -race -count=1 -v -timeout 0 -run '^TestModel$$' ./cmd/seckill

generate: ## regenerate templ views (*_templ.go)
	$(GO) tool templ generate

build: ## build the binary into bin/seckill
	$(GO) build -o bin/seckill ./cmd/seckill

faults: ## run the fault matrix of docs/OPERATIONS.md "Faults mid-sale": needs redis-server, DATABASE_URL (PostgreSQL) and REDIS_URL (a Redis the processes share)
	@test -n "$(DATABASE_URL)" -a -n "$(REDIS_URL)" || (echo "make faults: set DATABASE_URL (PostgreSQL) and REDIS_URL (docs/OPERATIONS.md: Faults mid-sale)"; exit 2)
	$(GO) test -count=1 -v -timeout 30m -run 'TestFailover|TestReplicaKilledMidSale|TestRedisRestartedEmptyMidSale|TestFlushTakeover|TestWebKilledMidRequest|TestPostgresCrashMidFlush|TestClockOff' ./cmd/seckill
	$(GO) test -count=1 -v -run 'TestOrderIDsNeverRepeat|TestPhantomWins|TestWaitAutoWithoutReplicas' ./db/goods ./db/rdb

BENCH_FLAGS ?= -users 20000 -n 200000 -c 200 -stock 1000 -ws 100 -idle-ws 5000
bench: ## load bench: grabs over HTTP vs the Redis limit and a naive SQLite baseline (report in docs/bench)
	$(GO) run ./cmd/seckill bench $(BENCH_FLAGS) -out docs/bench

lint: ## gofmt and go vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
