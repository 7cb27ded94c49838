#!/usr/bin/env python3
"""Sends mixed requests to a llama-server, PARALLEL at a time, in three phases, and says what
became of each: completed, answered with an error (the server's message), or lost (no answer:
the connection refused, reset or closed).

    before   prompts of 16 to 1000 tokens
    during   prompts of 1500 to 3000 tokens: the contexts grow past what the first phase needed.
             A stretch of trouble covers this phase: --hold runs a co-tenant (a command that
             prints "holding" once it holds its memory; killed when the phase ends), --window
             creates a file the server's fault spec watches (while=FILE; removed when the phase
             ends). The phase ends when its last request has returned, or after --max-stretch s.
    after    prompts of 16 to 3000 tokens, once the trouble is over

--spike-s W gives the trouble a fixed length instead: it lasts W s from its start, whenever the
requests return; --spike-at start opens it before the first phase (the server idling after
start-up), else it opens with the during phase. The after phase waits for it to end.

--soak S replaces the three phases with one, "soak": PARALLEL workers send requests for S s (a
request starts only before then), prompts of 16 to 3000 tokens; a worker stops early where the
server is gone; the same --seed sends the same requests in the same order.

Every request generates 32 to 200 tokens (ignore_eos) through /completion, with prompt caching
off; lengths come from --seed. Prompts are words of one token each, so their lengths hold to a
few tokens. One JSON line per request goes to --out, then a summary line; the summary is also
printed. Standard library only.

    serve-client.py --port 8090 --out serve.jsonl [--hold 'hold-memory 64'] [--window FILE]
                    [--spike-s 3 [--spike-at start]]
    serve-client.py --port 8090 --out soak.jsonl --soak 300
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

# words the Llama SentencePiece vocabulary holds as one token each (with the leading space)
WORDS = ("the of and to in is that for it as was with be by on not he this are or his from at which but have "
         "an they you were her she there one all we their has been if more when will would who so no").split()
PHASES = (("before", 16, 1000), ("during", 1500, 3000), ("after", 16, 3000))
GENERATED = (32, 200)
SOAK_PROMPT = (16, 3000)  # the soak's prompts: the lengths of every phase at once
OPENS_WITH = {"start": "before", "during": "during"}  # --spike-at: the phase the trouble opens with
HEALTH_TIMEOUT = 5.0  # s: a server that does not answer /health in this long is not serving


def prompt(rng, tokens):
    return " ".join(rng.choice(WORDS) for _ in range(tokens))


def post(url, body, timeout):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def error_message(e):
    """the server's own message of an HTTP error answer"""
    try:
        body = json.loads(e.read())
        err = body.get("error", body)
        return err.get("message", str(err)) if isinstance(err, dict) else str(err)
    except (ValueError, OSError):
        return f"HTTP {e.code}"


def one_request(base, phase, n_prompt, n_predict, rng_text, timeout):
    t0 = time.time()
    rec = {"phase": phase, "prompt_words": n_prompt, "n_predict": n_predict, "start": t0}
    body = {"prompt": rng_text, "n_predict": n_predict, "ignore_eos": True, "cache_prompt": False,
            "temperature": 0.0, "seed": 1}
    try:
        out = post(base + "/completion", body, timeout)
        timings = out.get("timings", {})
        rec.update(outcome="completed", prompt_n=timings.get("prompt_n", out.get("tokens_evaluated")),
                   predicted_n=timings.get("predicted_n", out.get("tokens_predicted")))
    except urllib.error.HTTPError as e:
        rec.update(outcome="error", message=error_message(e), status=e.code)
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
        reason = getattr(e, "reason", e)
        rec.update(outcome="lost", message=f"{type(reason).__name__}: {reason}")
    rec["end"] = time.time()
    return rec


def alive(base):
    try:
        with urllib.request.urlopen(base + "/health", timeout=HEALTH_TIMEOUT) as r:
            return r.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


class Trouble:
    """the stretch over the during phase: a co-tenant process, a fault-window file, or nothing"""

    def __init__(self, hold, window):
        self.hold, self.window, self.proc = hold, window, None
        self.opened = self.closed = None
        self.lock, self.timer = threading.Lock(), None

    def open_for(self, seconds):
        """opens the trouble, where there is one; with seconds, a timer closes it then"""
        if not (self.hold or self.window):
            return
        self.open()
        if seconds:
            self.timer = threading.Timer(seconds, self.close)
            self.timer.start()

    def wait_closed(self):
        if self.timer:
            self.timer.join()

    def open(self):
        if self.hold:
            self.proc = subprocess.Popen(self.hold, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         text=True, start_new_session=True)
            line = self.proc.stdout.readline()  # its one line once it holds the memory
            if "holding" not in line:
                raise SystemExit(f"serve-client: the co-tenant did not start: {line.strip()}")
        if self.window:
            open(self.window, "w").close()
        self.opened = time.time()

    def close(self):
        with self.lock:  # the timer's and the phase's close: the first one closes
            if self.opened is None or self.closed is not None:
                return
            self._close()

    def _close(self):
        if self.proc:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the shell and the co-tenant it started
            self.proc.wait()
        if self.window:
            try:
                os.remove(self.window)
            except FileNotFoundError:
                pass
        self.closed = time.time()


def run_phase(base, phase, lo, hi, args, rng, records):
    jobs = [(rng.randint(lo, hi), rng.randint(*GENERATED)) for _ in range(args.per_phase)]
    texts = [prompt(rng, n) for n, _ in jobs]
    lock, it = threading.Lock(), iter(range(len(jobs)))

    def worker():
        while True:
            with lock:
                i = next(it, None)
            if i is None:
                return
            rec = one_request(base, phase, jobs[i][0], jobs[i][1], texts[i], args.timeout)
            with lock:
                records.append(rec)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(args.parallel)]
    for t in threads:
        t.start()
    deadline = time.time() + (args.max_stretch if phase == "during" else args.timeout * len(jobs))
    for t in threads:
        t.join(max(0.0, deadline - time.time()))


def run_soak(base, args, rng, records):
    """requests from PARALLEL workers until --soak s have passed, drawn in order from one generator"""
    deadline = time.time() + args.soak
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if time.time() >= deadline:
                    return
                n_prompt, n_predict = rng.randint(*SOAK_PROMPT), rng.randint(*GENERATED)
                text = prompt(rng, n_prompt)
            rec = one_request(base, "soak", n_prompt, n_predict, text, args.timeout)
            with lock:
                records.append(rec)
            if rec["outcome"] == "lost" and not alive(base):
                return  # the server is gone: every later request would only be refused

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(args.parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def summarize(records, trouble, t0, t1, alive_after):
    by = {}
    for r in records:
        ph = by.setdefault(r["phase"], {"completed": 0, "error": 0, "lost": 0, "predicted": 0})
        ph[r["outcome"]] += 1
        ph["predicted"] += r.get("predicted_n") or 0
        if trouble.opened and r["start"] < trouble.closed and r["end"] > trouble.opened:
            r["met_trouble"] = True  # in flight during the stretch
            ph["met_trouble_" + r["outcome"]] = ph.get("met_trouble_" + r["outcome"], 0) + 1
    messages = sorted({r["message"] for r in records if r["outcome"] != "completed"})
    total = sum(p["predicted"] for p in by.values())
    return {"summary": True, "phases": by, "alive_after": alive_after, "wall_s": round(t1 - t0, 2),
            "generated_tokens": total, "generated_per_s": round(total / max(t1 - t0, 1e-9), 1),
            "stretch_s": round(trouble.closed - trouble.opened, 2) if trouble.opened else None,
            "stretch_from_s": round(trouble.opened - t0, 2) if trouble.opened else None,
            "messages": messages[:8]}


def run_phases(base, args, rng, records, trouble):
    """the three phases, the trouble over the during one (or for --spike-s s)"""
    try:
        for phase, lo, hi in PHASES:
            if phase == OPENS_WITH[args.spike_at]:
                trouble.open_for(args.spike_s)
            if phase == "after":
                trouble.wait_closed()
            run_phase(base, phase, lo, hi, args, rng, records)
            if phase == "during" and not args.spike_s:
                trouble.close()
    finally:
        if trouble.timer:
            trouble.timer.cancel()
        trouble.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", required=True, help="one JSON line per request, then the summary")
    ap.add_argument("--per-phase", type=int, default=8, help="requests in each of the three phases")
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300.0, help="s a request may take")
    ap.add_argument("--max-stretch", type=float, default=120.0, help="s the during phase (and its trouble) lasts at most")
    ap.add_argument("--hold", help="a co-tenant command for the during phase")
    ap.add_argument("--window", help="a file that exists during the during phase")
    ap.add_argument("--spike-s", type=float, help="the trouble lasts this long, whenever the requests return")
    ap.add_argument("--spike-at", choices=("start", "during"), default="during",
                    help="start: the trouble opens before the first phase, while the server idles")
    ap.add_argument("--soak", type=float, help="one phase of requests for this many s instead of the three")
    args = ap.parse_args()

    base = f"http://{args.host}:{args.port}"
    rng = random.Random(args.seed)
    records, trouble = [], Trouble(args.hold, args.window)
    t0 = time.time()
    if args.soak:
        run_soak(base, args, rng, records)
    else:
        run_phases(base, args, rng, records, trouble)
    t1 = time.time()
    summary = summarize(records, trouble, t0, t1, alive(base))
    with open(args.out, "w") as f:
        for r in sorted(records, key=lambda r: r["start"]):
            f.write(json.dumps(r) + "\n")
        f.write(json.dumps(summary) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
