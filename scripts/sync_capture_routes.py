"""Issue 32's design probe: capturing changes with SQLite's session extension (apsw) against an
outbox table filled by triggers (sqlean.py, the store's driver), on the same workload: N_MSG messages
with an FTS5 index kept by a trigger and N_EDIT edits of one core-memory block, each in its own
transaction as the app writes them. Prints bytes carried over row bytes, what capture costs a local
write, and applying against writing locally. Not a dependency of MemDesk (apsw is not installed by
make); run it in a scratch venv:

    python3 -m venv /tmp/probe && /tmp/probe/bin/pip install apsw==3.54.1.0 sqlean.py==3.50.4.5
    N_MSG=5000 N_EDIT=1000 /tmp/probe/bin/python scripts/sync_capture_routes.py

The figures and the choice are in docs/sync.md."""

import json
import os
import tempfile
import time
import zlib

import apsw  # type: ignore[import-not-found]
import sqlean

SCHEMA = """
CREATE TABLE messages(id INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE, agent_id INTEGER NOT NULL,
  created_at TEXT NOT NULL, role TEXT NOT NULL, kind TEXT NOT NULL, content TEXT NOT NULL,
  search_text TEXT NOT NULL DEFAULT '');
CREATE VIRTUAL TABLE messages_fts USING fts5(search_text, content='messages', content_rowid='id',
  tokenize='porter unicode61');
CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts(rowid, search_text) VALUES (new.id, new.search_text);
END;
CREATE TABLE blocks(id INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE, label TEXT NOT NULL, value TEXT NOT NULL,
  version INTEGER NOT NULL DEFAULT 1);
"""
OUTBOX = """
CREATE TABLE outbox(seq INTEGER PRIMARY KEY, tbl TEXT NOT NULL, uid TEXT NOT NULL, op TEXT NOT NULL);
CREATE TRIGGER messages_ob AFTER INSERT ON messages BEGIN
  INSERT INTO outbox(tbl, uid, op) VALUES ('messages', new.uid, 'i');
END;
CREATE TRIGGER blocks_ob AFTER UPDATE ON blocks BEGIN
  INSERT INTO outbox(tbl, uid, op) VALUES ('blocks', new.uid, 'u');
END;
"""
N_MSG = int(os.environ.get("N_MSG", 3000))
N_EDIT = int(os.environ.get("N_EDIT", 500))
WORDS = "porto lisbon coffee garden sister violin train rain morning river book cat".split()


def rows():
    for i in range(N_MSG):
        text = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(30))
        yield (f"{i:026d}", 1, f"2026-12-01T10:{i % 60:02d}:00Z", "user", "user_message", text, text)


def row_bytes(r):
    return sum(8 if isinstance(v, int) else len(str(v).encode()) for v in r)


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


INS = "INSERT INTO messages(uid, agent_id, created_at, role, kind, content, search_text) VALUES (?,?,?,?,?,?,?)"


def apsw_conn(path):
    c = apsw.Connection(path)
    c.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL")
    c.execute(SCHEMA)
    c.execute("INSERT INTO blocks(uid,label,value) VALUES ('b1','human','')")
    return c


def sqlean_conn(path, outbox):
    c = sqlean.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA synchronous=NORMAL")
    c.executescript(SCHEMA + (OUTBOX if outbox else ""))
    c.execute("INSERT INTO blocks(uid,label,value) VALUES ('b1','human','')")
    return c


def local_writes(execute, data):
    # one small transaction per row, as the app writes (one agent step, one transaction)
    for r in data:
        execute("BEGIN IMMEDIATE")
        execute(INS, r)
        execute("COMMIT")
    value = ""
    for i in range(N_EDIT):
        value = (value + f"\nline {i} about {WORDS[i % len(WORDS)]}")[-1800:]
        execute("BEGIN IMMEDIATE")
        execute("UPDATE blocks SET value=?, version=version+1 WHERE uid='b1'", (value,))
        execute("COMMIT")


def main():
    d = tempfile.mkdtemp()
    data = list(rows())
    out = {}
    block_bytes = 0
    value = ""
    for i in range(N_EDIT):
        value = (value + f"\nline {i} about {WORDS[i % len(WORDS)]}")[-1800:]
        block_bytes += len(value) + 2 + 8
    carried = sum(row_bytes(r) for r in data) + block_bytes
    # --- session extension --------------------------------------------------------------
    plain = apsw_conn(f"{d}/a0.db")
    t_plain, _ = timed(lambda: local_writes(plain.execute, data))
    src = apsw_conn(f"{d}/a1.db")
    sess = apsw.Session(src, "main")
    sess.attach("messages")
    sess.attach("blocks")
    t_sess, _ = timed(lambda: local_writes(src.execute, data))
    t_cs, cs = timed(sess.changeset)
    dst = apsw_conn(f"{d}/a2.db")

    def apply():
        with dst:
            apsw.Changeset.apply(cs, dst, conflict=lambda *a: apsw.SQLITE_CHANGESET_REPLACE)

    t_apply, _ = timed(apply)
    ref = apsw_conn(f"{d}/a3.db")

    def bulk_local(c):
        with c:
            c.executemany(INS, data)
            v = ""
            for i in range(N_EDIT):
                v = (v + f"\nline {i} about {WORDS[i % len(WORDS)]}")[-1800:]
                c.execute("UPDATE blocks SET value=?, version=version+1 WHERE uid='b1'", (v,))

    t_ref, _ = timed(lambda: bulk_local(ref))
    assert dst.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'porto'").fetchone()[0] > 0
    out["session"] = {
        "bytes_per_change_over_row_bytes": round(len(cs) / carried, 3),
        "compressed": round(len(zlib.compress(cs, 6)) / carried, 3),
        "local_write_overhead": round(t_sess / t_plain, 3),
        "changeset_s": round(t_cs, 3),
        "apply_changes_per_s": round((N_MSG + N_EDIT) / t_apply),
        "apply_over_local_write": round(t_apply / t_ref, 3),
    }
    # --- outbox by triggers -------------------------------------------------------------
    p0 = sqlean_conn(f"{d}/s0.db", False)
    t_plain2, _ = timed(lambda: local_writes(p0.execute, data))
    s1 = sqlean_conn(f"{d}/s1.db", True)
    t_ob, _ = timed(lambda: local_writes(s1.execute, data))

    def export():
        # coalesced per row: the current row, once, whatever number of updates it had
        recs = []
        for tbl, uid in s1.execute("SELECT tbl, uid FROM outbox GROUP BY tbl, uid ORDER BY min(seq)"):
            if tbl == "messages":
                recs.append(
                    [
                        "m",
                        list(
                            s1.execute(
                                "SELECT uid, agent_id, created_at, role, kind, content, search_text"
                                " FROM messages WHERE uid=?",
                                (uid,),
                            ).fetchone()
                        ),
                    ]
                )
            else:
                recs.append(
                    [
                        "b",
                        list(
                            s1.execute("SELECT uid, label, value, version FROM blocks WHERE uid=?", (uid,)).fetchone()
                        ),
                    ]
                )
        return json.dumps(recs, separators=(",", ":")).encode()

    t_exp, payload = timed(export)
    # and without coalescing: one record per block edit (what three-way merge by line needs at worst)
    per_edit = len(payload) + block_bytes
    s2 = sqlean_conn(f"{d}/s2.db", True)

    def apply2():
        recs = json.loads(payload)
        s2.execute("BEGIN IMMEDIATE")
        s2.executemany(
            "INSERT OR IGNORE INTO messages(uid, agent_id, created_at, role, kind, content, search_text)"
            " VALUES (?,?,?,?,?,?,?)",
            [r[1] for r in recs if r[0] == "m"],
        )
        for r in recs:
            if r[0] == "b":
                s2.execute("UPDATE blocks SET value=?, version=? WHERE uid=?", (r[1][2], r[1][3], r[1][0]))
        s2.execute("COMMIT")

    t_apply2, _ = timed(apply2)
    r2 = sqlean_conn(f"{d}/s3.db", True)

    def bulk2():
        r2.execute("BEGIN IMMEDIATE")
        r2.executemany(INS, data)
        v = ""
        for i in range(N_EDIT):
            v = (v + f"\nline {i} about {WORDS[i % len(WORDS)]}")[-1800:]
            r2.execute("UPDATE blocks SET value=?, version=version+1 WHERE uid='b1'", (v,))
        r2.execute("COMMIT")

    t_ref2, _ = timed(bulk2)
    out["outbox"] = {
        "bytes_per_change_over_row_bytes": round(per_edit / carried, 3),
        "coalesced": round(len(payload) / carried, 3),
        "compressed": round(len(zlib.compress(payload, 6)) / carried, 3),
        "local_write_overhead": round(t_ob / t_plain2, 3),
        "export_s": round(t_exp, 3),
        "apply_changes_per_s": round((N_MSG + N_EDIT) / t_apply2),
        "apply_over_local_write": round(t_apply2 / t_ref2, 3),
    }
    out["messages"], out["block_edits"] = N_MSG, N_EDIT
    out["load"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


main()
