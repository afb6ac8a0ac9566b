"""`ragtap experiment {squad2,cloud-faq,mirage,thresholds}`: the thesis's experiments, MIRAGE, and the derivation
of the default thresholds, over datasets on disk (`--data DIR` or RAGTAP_DATA; nothing is downloaded).

Generation goes through ragtap's own proxy, started in-process and pointed at `--upstream`; `--no-llm`
skips generation and measures what needs none (QRD, retrieval).  See docs/evaluation.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ragtap.commands.common import positive_int
from ragtap.config import ConfigError, load_config

EXPERIMENTS = ("squad2", "cloud-faq", "mirage", "thresholds")


def _common(p: argparse.ArgumentParser, *, default_limit: str, generation: bool = True) -> None:
    p.add_argument("--data", help="dataset directory (default: $RAGTAP_DATA, else ../shared/data)")
    p.add_argument("--out", required=True, help="output directory: report.md, report.json, plots, scored.jsonl")
    p.add_argument("--limit", type=int, help=f"sample size ({default_limit})")
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    p.add_argument("--config", help="config.toml (thresholds, embedder, refusal patterns)")
    p.add_argument("--index-cache", help="directory for cached faiss indexes (default: $RAGTAP_CACHE or ~/.cache/ragtap)")
    p.add_argument("--no-index-cache", action="store_true", help="build indexes in memory only")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--jobs", type=positive_int, help="processes scoring in parallel (default: one per core; same results)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots (report.md and report.json only)")
    if generation:
        p.add_argument("--no-llm", action="store_true", help="no generation: only what needs no LLM (QRD, retrieval)")
        p.add_argument("--upstream", help="the upstream's OpenAI base URL (default: the config's server.upstream)")
        p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the upstream's API key (default OPENAI_API_KEY)")
        p.add_argument("--model", default="gpt-3.5-turbo", help="model name sent upstream (default gpt-3.5-turbo, the thesis's)")
        p.add_argument("--concurrency", type=int, default=8, help="requests in flight (default 8)")
        p.add_argument("--retries", type=int, default=4, help="retries per request on 429/5xx/connection errors, with exponential backoff (default 4)")
        p.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default 120)")
        p.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
        p.add_argument("--max-tokens", type=int, help="max_tokens per answer (default: the upstream's)")
        p.add_argument("--cache", help="generation cache, JSON lines (default OUT/generations.jsonl); a rerun continues from it")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("experiment", help="run an evaluation experiment (squad2, cloud-faq, mirage, thresholds, wikieval, delucionqa, ragtruth, "
                                               "faithbench, guard)")
    sub = p.add_subparsers(dest="experiment", required=True)

    s = sub.add_parser("squad2", help="the thesis's SQuAD 2.0 experiment (unanswerable = poor generation)")
    _common(s, default_limit="default 1485: 992 answerable, 493 unanswerable")

    c = sub.add_parser("cloud-faq", help="the thesis's cloud FAQ experiment (aws index; gcp/ibm questions unanswerable)")
    _common(c, default_limit="default 400: 153 aws, 247 gcp/ibm")
    c.add_argument("--top-k", type=int, default=1, help="documents retrieved and sent per question (default 1, as in the thesis's examples)")
    c.add_argument("--no-source-prefix", action="store_true", help="send gcp/ibm questions bare, without the thesis's 'In <source> service, ' prefix")

    m = sub.add_parser("mirage", help="the MIRAGE protocol (base / oracle / mixed) over your document pool")
    _common(m, default_limit="default: every question with a gold chunk in the pool")
    m.add_argument("--pool", required=True, help="JSON lines of {doc_name, text} chunks (MIRAGE's own pool is not shipped)")
    m.add_argument("--top-k", type=int, default=5, help="chunks retrieved for the mixed setting (default 5)")

    t = sub.add_parser("thresholds", help="derive default thresholds for the embedder from labelled pair sets")
    _common(t, default_limit="SQuAD questions per SQuAD pair set, default 600", generation=False)
    t.add_argument("--qrd-questions", type=int, default=1000, help="cloud-FAQ questions for the QRD pair set, and as many held out (default 1000)")
    t.add_argument("--no-source-prefix", action="store_true", help="QRD pairs: bare gcp/ibm questions")
    t.add_argument("--qrd-window-words", type=int, default=None,
                   help="QRD's windows inside the closest passage, in words (default: [scoring] qrd_window_words; 0: whole passages)")
    t.add_argument("--write", help="also write the [thresholds] TOML fragment here")

    from ragtap.evaluation.experiments.delucionqa import add_delucionqa_parser
    from ragtap.evaluation.experiments.guard import add_guard_parser
    from ragtap.evaluation.experiments.labelled import add_labelled_parsers
    from ragtap.evaluation.experiments.wikieval import add_wikieval_parser  # Ragas Table 1 on WikiEval (owner: the judge)

    add_wikieval_parser(sub)
    add_delucionqa_parser(sub)
    add_labelled_parsers(sub)
    add_guard_parser(sub)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.experiment == "delucionqa":
        from ragtap.evaluation.experiments.delucionqa import run_delucionqa

        return run_delucionqa(args)
    if args.experiment == "guard":
        from ragtap.evaluation.datasets import DatasetError
        from ragtap.evaluation.experiments.guard import run_guard

        try:
            return run_guard(args)
        except (DatasetError, ConfigError) as error:
            print(f"ragtap experiment: {error}", file=sys.stderr)
            return 2
    if args.experiment in ("ragtruth", "faithbench"):
        from ragtap.evaluation.datasets import DatasetError
        from ragtap.evaluation.experiments.labelled import run_labelled

        try:
            return run_labelled(args)
        except DatasetError as error:
            print(f"ragtap experiment: {error}", file=sys.stderr)
            return 2
    if args.experiment == "wikieval":
        from ragtap.evaluation.experiments.wikieval import run_wikieval

        return run_wikieval(args)
    from ragtap.evaluation.calibration import CalibrationError
    from ragtap.evaluation.datasets import DatasetError

    try:
        return _run(args)
    except (DatasetError, CalibrationError, ConfigError) as error:
        print(f"ragtap experiment: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ragtap experiment: interrupted; rerun the same command to continue from the generation cache", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    from ragtap.evaluation import common
    from ragtap.evaluation.datasets import resolve_data_dir
    from ragtap.evaluation.generate import GenerationAborted, GenerationSettings
    from ragtap.evaluation.jobs import default_jobs
    from ragtap.evaluation.retrieval import default_cache_dir
    from ragtap.wiring import build_embedder

    config = load_config(args.config)
    data_dir = resolve_data_dir(args.data)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    index_cache = None if args.no_index_cache else Path(args.index_cache) if args.index_cache else default_cache_dir() / "index"
    _check_inputs(args, data_dir)  # fail on a missing file before loading the embedding model
    embedder = build_embedder(config)  # [scoring] embedder and embedder_threads from the config

    if args.experiment == "thresholds":
        return _thresholds(args, data_dir, out_dir, index_cache, embedder, config.scoring.qrd_window_words)

    generation = None
    if not args.no_llm:
        upstream = args.upstream or config.server.upstream
        key = os.environ.get(args.api_key_env)
        if not key:
            print(f"ragtap experiment: ${args.api_key_env} is not set; sending requests without an API key", file=sys.stderr)
        generation = GenerationSettings(
            upstream=upstream,
            model=args.model,
            api_key=key,
            concurrency=args.concurrency,
            retries=args.retries,
            timeout_s=args.timeout,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
        )
    options = common.RunOptions(
        data_dir=data_dir,
        out_dir=out_dir,
        config=config,
        limit=args.limit,
        seed=args.seed,
        no_llm=args.no_llm,
        generation=generation,
        cache_path=Path(args.cache) if args.cache else None,
        index_cache_dir=index_cache,
        top_k=getattr(args, "top_k", 3),
        quiet=args.quiet,
        plots=not args.no_plots,
        jobs=args.jobs or default_jobs(),
    )
    try:
        if args.experiment == "squad2":
            from ragtap.evaluation.experiments import squad2

            data = squad2.run(options, embedder)
        elif args.experiment == "cloud-faq":
            from ragtap.evaluation.experiments import cloud_faq

            data = cloud_faq.run(options, embedder, source_prefix=not args.no_source_prefix)
        else:
            from ragtap.evaluation.experiments import mirage

            data = mirage.run(options, embedder, pool_path=Path(args.pool))
    except GenerationAborted as error:
        print(f"ragtap experiment: the upstream refused the requests ({error}); check --upstream, --model and ${args.api_key_env}", file=sys.stderr)
        return 1
    _summary(data, out_dir)
    failed = (data.get("generation") or {}).get("failed") or sum(1 for n in data.get("notes", []) if "failed after retries" in n)
    return 1 if failed else 0


def _check_inputs(args: argparse.Namespace, data_dir: Path) -> None:
    from ragtap.evaluation import datasets as ds

    needed = {
        "squad2": (ds.SQUAD2,),
        "cloud-faq": (ds.CLOUD_FAQ,),
        "mirage": (ds.MIRAGE,),
        "thresholds": (ds.SQUAD2, ds.CLOUD_FAQ, ds.WIKIEVAL),
    }[args.experiment]
    for relative in needed:
        ds.dataset_file(data_dir, relative)
    if args.experiment == "mirage" and not Path(args.pool).is_file():
        raise ds.DatasetError(f"--pool {args.pool}: file not found")


def _summary(data: dict, out_dir: Path) -> None:
    lines = [f"ragtap experiment {data.get('experiment')}: n={data.get('n')}" + (f", positives={data['positives']}" if "positives" in data else "")]
    auc = {k: v for k, v in (data.get("auc") or {}).items() if v is not None}
    if auc:
        lines.append("AUC: " + ", ".join(f"{k} {v:.4f}" for k, v in auc.items()))
    retrieval = data.get("retrieval")
    if isinstance(retrieval, dict) and "hit_rate" in retrieval:
        lines.append("retrieval hit rate (aws questions): " + ", ".join(f"@{k} {v:.4f}" for k, v in retrieval["hit_rate"].items() if v is not None))
    elif isinstance(retrieval, dict):
        lines.append("retrieval over the pool: " + ", ".join(f"@{k} recall {v['recall']:.4f} ndcg {v['ndcg']:.4f}" for k, v in retrieval.items()))
    if "adaptability" in data:
        a = data["adaptability"]
        lines.append(
            f"noise vulnerability {a['noise_vulnerability']:.4f}, context acceptability {a['context_acceptability']:.4f}, "
            f"insensitivity {a['context_insensitivity']:.4f}, misinterpretation {a['context_misinterpretation']:.4f}"
        )
    lines.append(f"report: {out_dir / 'report.md'}")
    print("\n".join(lines))


def _thresholds(args: argparse.Namespace, data_dir: Path, out_dir: Path, index_cache: Path | None, embedder, window_words: int) -> int:  # type: ignore[no-untyped-def]
    import json

    from ragtap.evaluation.experiments import thresholds as th

    result = th.derive(
        data_dir,
        embedder,
        n=args.limit or 600,
        qrd_n=args.qrd_questions,
        seed=args.seed,
        cache_dir=index_cache,
        source_prefix=not args.no_source_prefix,
        quiet=args.quiet,
        qrd_window_words=window_words if args.qrd_window_words is None else args.qrd_window_words,
    )
    md = th.markdown(result)
    if not args.no_plots:
        md += f"\n![pair-set distributions]({th.plot(result, out_dir)})\n"
    (out_dir / "report.md").write_text(md, encoding="utf-8")
    public = {k: v for k, v in result.items() if not k.startswith("_")}
    (out_dir / "report.json").write_text(json.dumps(public, indent=1), encoding="utf-8")
    fragment = th.toml(result)
    (out_dir / "thresholds.toml").write_text(fragment, encoding="utf-8")
    if args.write:
        Path(args.write).write_text(fragment, encoding="utf-8")
    print(fragment, end="")
    for metric, m in result["metrics"].items():
        print(f"{metric}: AUC {m['auc']:.4f}, Youden threshold {m['youden_threshold']:.3f}, chosen {m['chosen']:.2f}" + (f" ({m['adjusted']})" if m["adjusted"] else ""))
    if result["example_problems"]:
        print("thesis examples: " + "; ".join(result["example_problems"]), file=sys.stderr)
        return 1
    print(f"thesis examples keep their verdicts; report: {out_dir / 'report.md'}")
    return 0
