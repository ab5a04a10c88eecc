# tcpscope: make demo runs a test against a local server; make test installs
# what the tests need (on Debian, as root) and runs all of them.
GO      ?= go
BIN     := bin/tcpscope
PORT    ?= 5299
export CGO_ENABLED := 0

PREFIX  ?= /usr/local
DESTDIR ?=

.PHONY: all build demo demo-loopback test check setup bench-setup vet fuzz bench soak clean man install

all: build

# The commit and its date for tcpscope version, stamped by the linker:
# Go's own VCS stamp is missing in a git worktree or with
# GOFLAGS=-buildvcs=false (the binary prefers Go's when it has one).
COMMIT  := $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git status --porcelain 2>/dev/null | grep -q . && echo +dirty)
CDATE   := $(shell git log -1 --format=%ct 2>/dev/null)
LDFLAGS := -X main.commit=$(COMMIT) -X main.commitDate=$(CDATE)

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tcpscope

# The demo. As root: a host tuned as in 2001 against a tuned one across the
# Visible Human project's path (100 Mbit/s, 20 ms), emulated in network
# namespaces, three runs each, with the improvement factor and a plot.
# Without root (or without the lab's tools): a server on loopback and tests
# showing both ends' kernel view.
demo: build
	@if [ "$$(id -u)" = 0 ] && $(BIN) lab clean >/dev/null 2>&1; then \
	  echo "\$$ tcpscope lab run tuning --path vhp --repeat 3 -t 5"; \
	  $(BIN) lab run tuning --path vhp --repeat 3 -t 5 --plot tcpscope-demo; \
	else \
	  echo "(not root: the lab needs network namespaces; showing the loopback demo)"; \
	  $(MAKE) --no-print-directory demo-loopback; \
	fi

demo-loopback: build
	@$(BIN) server --listen 127.0.0.1:$(PORT) >/tmp/tcpscope-demo-server.log 2>&1 & pid=$$!; \
	trap 'kill $$pid 2>/dev/null; wait $$pid 2>/dev/null' EXIT; trap 'exit 141' PIPE; trap 'exit 130' INT; trap 'exit 143' TERM HUP; \
	for i in 1 2 3 4 5 6 7 8 9 10; do $(BIN) test 127.0.0.1:$(PORT) -t 0.1 -i 1 >/dev/null 2>&1 && break; sleep 0.2; done; \
	echo "\$$ tcpscope test 127.0.0.1:$(PORT) -t 3"; \
	$(BIN) test 127.0.0.1:$(PORT) -t 3 && \
	echo && echo "\$$ tcpscope test 127.0.0.1:$(PORT) -t 2 -R -P 2 -w 256K" && \
	$(BIN) test 127.0.0.1:$(PORT) -t 2 -R -P 2 -w 256K

# Tools the tests drive for real: iperf3 (benchmark peer and watched
# transfers), nftables (lab loss), ethtool, tmux (the terminal view),
# python3 (a plain sender to watch) and postgresql (the archive's throwaway
# test servers; Debian keeps initdb off PATH, hence the extra check).
# Installed only when missing, and only as root on apt systems.
setup:
	@missing=""; for t in iperf3 nft ethtool tmux python3; do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "setup: installing$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 nftables ethtool tmux python3 postgresql >/dev/null; \
	  else echo "setup: missing$$missing (install them as root; tests needing them will skip)"; fi; \
	fi

vet:
	@test -z "$$(gofmt -l cmd internal bench tools)" || { gofmt -l cmd internal bench tools; echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...

# The developer's fast loop: formatting, vet and the pure and loopback
# tiers (namespace tests skip under -short), in under a minute.
check: vet
	$(GO) test -short -count=1 ./...

# The first run goes through tools/testtiers: go test's own output, then
# one line naming the tests that skipped and why (without root, the
# namespace tier); its exit code is go test's.
test: setup vet
	@mkdir -p bin && $(GO) build -o bin/testtiers ./tools/testtiers
	bin/testtiers -go $(GO) -json bin/test.json -- -p 1 -count=1 -timeout 15m ./...
	@# The engine, the server's port and gate, the protocols and the
	@# presenters again under the race detector (it needs cgo): their
	@# loopback tier, where the concurrency is; the namespace tests ran
	@# above, and under the detector they would double CI's time.
	@# One package at a time, as above: timing checks hold on a quiet host.
	CGO_ENABLED=1 $(GO) test -race -short -p 1 -count=1 -timeout 10m ./internal/engine ./internal/serve ./internal/gate ./internal/perf ./internal/iperf3 ./internal/cli ./internal/report

# Short fuzzing of the decoders (the CI test run replays their seed corpora).
fuzz:
	$(GO) test -run XXX -fuzz FuzzDecodeMessage -fuzztime 30s ./internal/perf
	$(GO) test -run XXX -fuzz FuzzIperf3Params -fuzztime 30s ./internal/iperf3
	$(GO) test -run XXX -fuzz FuzzIperf3Results -fuzztime 30s ./internal/iperf3
	$(GO) test -run XXX -fuzz FuzzDecode -fuzztime 30s ./internal/tcpinfo
	$(GO) test -run XXX -fuzz FuzzVerify -fuzztime 30s ./internal/token
	$(GO) test -run XXX -fuzz FuzzDecode -fuzztime 30s ./internal/sockdiag/inetdiag

# The benchmarks' other peers: iperf2 (Debian's iperf, 2.1.8) and nuttcp,
# installed only when missing, and only as root on apt systems.
bench-setup: setup
	@missing=""; for t in iperf:iperf nuttcp:nuttcp; do command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t#*:}"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "bench-setup: installing$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$missing >/dev/null; \
	  else echo "bench-setup: missing$$missing (install them as root; their rows are left out)"; fi; \
	fi

bench: build bench-setup
	bash bench/run.sh
	bash bench/fairness.sh
	bash bench/watch.sh
	bash bench/iperf3.sh
	@if [ "$$(id -u)" = 0 ]; then bash bench/lab.sh && bash bench/diagnose.sh; else echo "bench: the lab benchmarks need root"; fi

# Man pages for every command, generated from the commands themselves.
man: build
	$(BIN) man --dir bin/man/man1

# The binary, its man pages, the systemd unit and an example limits file
# (installed as /etc/tcpscope/limits.toml only when there is none).
install: build man
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/tcpscope
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 bin/man/man1/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -D -m 0644 deploy/tcpscope-server.service $(DESTDIR)$(PREFIX)/lib/systemd/system/tcpscope-server.service
	sed -i 's|/usr/local/bin/tcpscope|$(PREFIX)/bin/tcpscope|' $(DESTDIR)$(PREFIX)/lib/systemd/system/tcpscope-server.service
	install -D -m 0644 deploy/limits.toml $(DESTDIR)$(PREFIX)/share/doc/tcpscope/limits.toml
	@test -e $(DESTDIR)/etc/tcpscope/limits.toml || install -D -m 0644 deploy/limits.toml $(DESTDIR)/etc/tcpscope/limits.toml

# 20 minutes of the server under legitimate tests and attacks
# (SOAK_DURATION=5m for less); forged UDP hellos need root.
soak: build setup
	bash bench/soak.sh

clean:
	rm -rf bin
