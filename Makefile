# iu-core event worker — developer entry points. `make help` lists them.
#
# Two commands matter most:
#   make demo   a throwaway PostgreSQL, migrations, sample events, the worker, v_queue_health
#   make test   go test -race ./... against a real PostgreSQL, plus goose validate

GO           ?= go
BIN          := $(CURDIR)/bin
GOOSE        := $(BIN)/goose
GOOSE_VER    := v3.29.0
# The goose CLI without the drivers we do not use (and whose modules are not all reachable).
GOOSE_TAGS   := no_clickhouse no_libsql no_mssql no_mysql no_sqlite3 no_vertica no_ydb no_duckdb no_starrocks no_spanner
STATICCHECK  := $(BIN)/staticcheck
MIGRATIONS   := sql/iu-core

.DEFAULT_GOAL := help
.PHONY: help test test-upgrade demo build lint bench goose validate schema generate clean deploy-check

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

test: $(GOOSE) validate ## Run every test against a real PostgreSQL (race detector on), then test-upgrade
	GOOSE_BIN=$(GOOSE) $(GO) test -race -count=1 -timeout 30m ./...
	$(MAKE) test-upgrade

# The latest release (sql/releases.txt: its commit, extracted with git archive) installed
# and upgraded to this version is the template of every test database of these packages.
test-upgrade: ## Run the route-worker, queue-health and job-queue tests on a database upgraded from the latest release
	@commit=$$(awk '!/^#/ && NF >= 2 { c = $$2 } END { print c }' sql/releases.txt 2>/dev/null); \
	  if [ -z "$$commit" ]; then echo "test-upgrade: no release recorded yet (sql/releases.txt)"; exit 0; fi; \
	  dir=$$(mktemp -d) && echo "test-upgrade: from $$commit" && git archive $$commit sql/iu-core | tar -x -C $$dir && \
	  PGTEST_UPGRADE_FROM=$$dir/sql/iu-core $(GO) test -count=1 -timeout 20m ./tests/routeworker/ ./tests/queuehealth/ ./tests/jobqueue/; \
	  rc=$$?; rm -rf $$dir; exit $$rc

validate: $(GOOSE) ## Check the migrations parse (goose validate)
	$(GOOSE) -dir $(MIGRATIONS) validate

generate: ## Regenerate the migrations generated from sql/functions and sql/grants.sql (sql/generated.txt)
	UPDATE_GENERATED=1 $(GO) test -count=1 -run '^TestGeneratedMigrations_AreFresh$$' ./tests/

schema: ## Regenerate sql/schema.sql, the reviewed dump of the current schema
	UPDATE_SCHEMA=1 $(GO) test -count=1 -run '^TestSchemaDump_IsFresh$$' ./tests/

demo: ## Show the product end to end on a throwaway database
	$(GO) run ./cmd/iu-demo

build: ## Build bin/iu-runner
	$(GO) build -buildvcs=auto -o $(BIN)/iu-runner ./cmd/iu-runner

lint: ## go mod tidy check, go vet, gofmt check, staticcheck
	@# go.mod must say exactly what the code imports (direct requirements unmarked, the rest
	@# // indirect) and go.sum must hold every checksum: -diff prints what tidy would change.
	$(GO) mod tidy -diff
	$(GO) vet ./...
	cd bench/river && $(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@if [ -x $(STATICCHECK) ] || GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2 2>/dev/null; then \
	  $(STATICCHECK) ./...; else echo "staticcheck unavailable (module proxy unreachable?): skipped"; fi

deploy-check: build ## Check deploy/ with promtool, systemd-analyze and the deploy/check module
	@command -v promtool >/dev/null || { echo "deploy-check: promtool not found (apt-get install prometheus; .ci/run does)"; exit 1; }
	@command -v systemd-analyze >/dev/null || { echo "deploy-check: systemd-analyze not found (apt-get install systemd; .ci/run does)"; exit 1; }
	promtool check rules deploy/prometheus/iu-runner.rules.yml
	promtool test rules deploy/prometheus/iu-runner.rules.test.yml
	deploy/check/systemd.sh $(BIN)/iu-runner deploy/systemd/*.service deploy/systemd/*.timer
	cd deploy/check && $(GO) vet ./... && { [ ! -x $(STATICCHECK) ] || $(STATICCHECK) ./...; } && $(GO) test -count=1 ./...

bench: ## Run the benchmarks once each (figures as ratios against same-run baselines), then the River comparison
	@bash bench/deps/pgq.sh
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./bench/...
	@# bench/river is its own module (River stays out of the product's go.mod): ./bench/... skips it.
	cd bench/river && $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m .

goose: $(GOOSE) ## Build the plain goose CLI into bin/

$(GOOSE):
	GOBIN=$(BIN) $(GO) install -tags '$(GOOSE_TAGS)' github.com/pressly/goose/v3/cmd/goose@$(GOOSE_VER)

clean: ## Remove build outputs
	rm -rf $(BIN)
