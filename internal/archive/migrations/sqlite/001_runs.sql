-- Every test one host archived: its own client runs and the tests its
-- server served. The full document is kept; the columns beside it are
-- what lists, filters and statistics need without parsing JSON.
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at      TIMESTAMP NOT NULL,
    saved_at        TIMESTAMP NOT NULL,
    origin          TEXT      NOT NULL,            -- 'client' or 'server': which end archived it
    host            TEXT      NOT NULL,            -- the archiving host's name
    peer            TEXT      NOT NULL,            -- the other end, as it was reached or came
    tool            TEXT      NOT NULL,            -- the peer's kind: 'tcpscope' or 'iperf3'
    label           TEXT      NOT NULL DEFAULT '',
    protocol        TEXT      NOT NULL,            -- 'tcp' or 'udp'
    streams         INTEGER   NOT NULL,
    mode            TEXT      NOT NULL,            -- 'forward', 'reverse' or 'bidir'
    duration_ns     BIGINT    NOT NULL,
    ended           TEXT      NOT NULL,
    primary_finding TEXT      NOT NULL DEFAULT '',
    document        TEXT      NOT NULL             -- the run, as tcpscope test --json writes it
);
CREATE INDEX runs_started ON runs (started_at);
CREATE INDEX runs_peer ON runs (peer, started_at);

CREATE TABLE directions (
    run_id         INTEGER          NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    direction      TEXT             NOT NULL,
    goodput_bps    DOUBLE PRECISION,  -- NULL: not measured
    sender_bytes   BIGINT,  -- NULL: not measured
    receiver_bytes BIGINT,  -- NULL: not measured
    retrans_segs   BIGINT,  -- NULL: not measured
    loss_rate      DOUBLE PRECISION,           -- NULL: not known
    min_rtt_ns     BIGINT,                     -- NULL: not known
    mean_rtt_ns    BIGINT,  -- NULL: not measured
    PRIMARY KEY (run_id, direction)
);

CREATE TABLE findings (
    run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    finding    TEXT    NOT NULL,
    direction  TEXT    NOT NULL DEFAULT '',
    severity   TEXT    NOT NULL,
    layer      TEXT    NOT NULL,
    is_primary BOOLEAN NOT NULL,
    summary    TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX findings_finding ON findings (finding);
