#!/usr/bin/env python3
"""Build the evalkit demo labelled set (invented company "Lumenrow").

The documents are written by hand in ``docs/<doc_id>.md``. This script holds
the document metadata and the labelled questions; for every evidence span it
takes the exact answer text (plus an optional anchor: a longer, unique piece of
the document that contains the answer once), finds its offsets and writes

    docs.jsonl, questions.jsonl, stats.json

It fails loudly when an answer text is missing or ambiguous. Standard library
only; running it twice gives byte-identical files.

    python labelsets/demo/build_demo.py           # build
    python labelsets/demo/build_demo.py --check   # build in memory, compare with files on disk
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent
DOCS_DIR = ROOT / "docs"
AS_OF = "2026-01-15"
DATASET = "lumenrow-demo"
ROLES = ("employee", "hr", "exec", "security")

# ---------------------------------------------------------------------------
# Documents: doc_id -> meta. Title is the first "# " line of the file.
# ---------------------------------------------------------------------------

ALL = ["all"]


def meta(kind, lang, office="global", acl=ALL, **extra):
    m = {"kind": kind, "lang": lang, "office": office, "acl": list(acl)}
    m.update(extra)
    return m


def policy(lang, office, policy_id, version, effective, **extra):
    m = meta("policy", lang, office, policy_id=policy_id, version=version,
             effective_date=effective, superseded_by=None)
    m.update(extra)
    return m


DOCS = {
    # --- English ------------------------------------------------------------
    "travel-expense-policy-v2": policy(
        "en", "global", "FIN-POL-004", "2", "2024-01-01",
        superseded_by="travel-expense-policy-v3", expires="2025-06-30", status="superseded"),
    "travel-expense-policy-v3": policy(
        "en", "global", "FIN-POL-004", "3", "2025-07-01",
        supersedes="travel-expense-policy-v2", status="in_effect"),
    "expense-faq-en": meta("faq", "en", "berlin", updated="2025-09-02", follows="travel-expense-policy-v3"),
    "sdk-api-reference": meta("api_reference", "en", version="3.1.0"),
    "sdk-changelog": meta("changelog", "en", latest_version="3.1.0"),
    "src-ratelimit-py": meta("code", "en", code_lang="python", source_path="sdk-python/lumenrow/ratelimit.py"),
    "src-webhook-verify-ts": meta("code", "en", code_lang="typescript", source_path="sdk-node/src/webhooks/verify.ts"),
    "src-ingest-handler-go": meta("code", "en", code_lang="go", source_path="beacon/internal/ingest/handler.go"),
    "onboarding-engineering-berlin": meta("onboarding", "en", "berlin"),
    "security-incident-runbook": meta("runbook", "en", doc_number="SEC-RB-001", version="4.2", updated="2025-08-28"),
    "oncall-runbook-ingest": meta("runbook", "en", updated="2025-09-30"),
    "it-handbook": meta("handbook", "en", "berlin", updated="2025-07-15"),
    "data-retention-policy": policy("en", "global", "LEG-POL-002", "1.2", "2025-03-01"),
    "pricing-sheet-2025": meta("pricing", "en", effective_date="2025-01-01", region="eu"),
    "product-faq-en": meta("faq", "en", updated="2025-10-27"),
    "arch-review-2025-09-18": meta("meeting_notes", "en", date="2025-09-18"),
    "salary-bands-2025": meta("compensation", "en", acl=["hr"], classification="confidential",
                              effective_date="2025-04-01", expires="2026-03-31"),
    "ma-memo-project-kestrel": meta("memo", "en", acl=["exec"], classification="strictly_confidential",
                                    date="2025-10-08"),
    "postmortem-2025-03-api-key-exposure": meta("postmortem", "en", acl=["security", "exec"],
                                                classification="restricted", incident="SEC-2025-007"),
    "code-review-guidelines": meta("guideline", "en", updated="2025-04-02"),
    "remote-work-policy": policy("en", "berlin", "PPL-POL-007", "1.1", "2025-02-01"),
    "support-sla": policy("en", "global", "SLA", "2.0", "2025-01-01"),
    "release-process": meta("process", "en", updated="2025-06-10"),
    # --- Simplified Chinese ---------------------------------------------------
    "leave-policy-shanghai": policy("zh-Hans", "shanghai", "HR-SH-003", "2.1", "2025-01-01"),
    "expense-faq-zh": meta("faq", "zh-Hans", "shanghai", updated="2025-09-05", follows="travel-expense-policy-v3"),
    "onboarding-shanghai": meta("onboarding", "zh-Hans", "shanghai"),
    "it-guide-shanghai": meta("handbook", "zh-Hans", "shanghai", updated="2025-08-20"),
    "oncall-policy-shanghai": policy("zh-Hans", "shanghai", "ENG-SH-002", "1.3", "2025-04-01"),
    "data-classification-zh": policy("zh-Hans", "global", "SEC-STD-003", "3.0", "2025-05-15"),
    "product-faq-zh": meta("faq", "zh-Hans", "shanghai", updated="2025-10-30"),
    "pricing-cn-2025": meta("pricing", "zh-Hans", "shanghai", effective_date="2025-01-01", region="cn"),
    "postmortem-2025-08-14-ingest-lag": meta("postmortem", "zh-Hans", "shanghai", incident_date="2025-08-14"),
    "weekly-sh-eng-2025-10-13": meta("meeting_notes", "zh-Hans", "shanghai", date="2025-10-13"),
    "planning-2026-kickoff": meta("meeting_notes", "zh-Hans", date="2025-11-20"),
    "salary-review-2025-shanghai": meta("compensation", "zh-Hans", "shanghai", acl=["hr"],
                                        classification="strictly_confidential", effective_date="2025-04-01"),
    "board-summary-2025q3": meta("report", "zh-Hans", acl=["exec"], classification="strictly_confidential",
                                 date="2025-10-22"),
    "attendance-policy-shanghai": policy("zh-Hans", "shanghai", "HR-SH-002", "1.4", "2025-03-01"),
    "procurement-policy-shanghai": policy("zh-Hans", "shanghai", "FIN-SH-005", "2.0", "2025-06-01"),
    "support-ticket-guide-zh": meta("guideline", "zh-Hans", "shanghai", updated="2025-07-08"),
    "data-export-guide-zh": meta("guide", "zh-Hans"),
    "private-deployment-guide-zh": meta("guide", "zh-Hans", "shanghai", version="5.4.2", updated="2025-10-10"),
    "benefits-shanghai": meta("handbook", "zh-Hans", "shanghai", updated="2025-03-10"),
    "office-guide-shanghai": meta("handbook", "zh-Hans", "shanghai"),
    "training-budget-policy": policy("zh-Hans", "shanghai", "HR-SH-006", "1.2", "2025-01-01"),
    "glossary-zh": meta("glossary", "zh-Hans"),
    "performance-review-process-zh": meta("process", "zh-Hans", doc_number="HR-GL-004", version="2025"),
}

# ---------------------------------------------------------------------------
# Questions
# ---------------------------------------------------------------------------
# Evidence items: (doc_id, answer_text) or (doc_id, answer_text, anchor). The
# anchor must occur exactly once in the document and contain answer_text
# exactly once; without an anchor, answer_text itself must be unique.

QUESTIONS: list[dict] = []

V2, V3 = "travel-expense-policy-v2", "travel-expense-policy-v3"


def Q(qid, question, answer, answers, evidence, *, topic, role="employee", hop=False,
      kind=None, passage=None, **tags):
    QUESTIONS.append(dict(id=qid, question=question, answer=answer, answers=list(answers),
                          evidence=evidence, hop=hop, topic=topic, role=role, kind=kind,
                          passage=passage, tags=tags))


def U(qid, question, unanswerable_kind, *, topic, role="employee", passage=(), kind=None, **tags):
    QUESTIONS.append(dict(id=qid, question=question, answer="", answers=[], evidence=[],
                          hop=False, topic=topic, role=role, kind=kind, passage=list(passage),
                          tags=dict(unanswerable_kind=unanswerable_kind, **tags)))


def OUTDATED(old):
    """Tags of a question whose answer changed between policy versions."""
    return dict(trap="outdated_version", as_of=AS_OF, outdated_doc_id=V2, outdated_answer=old)


# ----- travel & expense policy (English) ------------------------------------
Q("en-001", "What is the maximum hotel rate per night for a business trip to Berlin?",
  "220 EUR", ["220 EUR", "220 EUR per night", "220 euros", "220"],
  [(V3, "220 EUR", "| Berlin | 220 EUR |"), ("expense-faq-en", "220 EUR", "Up to 220 EUR per night"),
   (V3, "220 EUR", "from 180 EUR to 220 EUR")],
  topic="travel", **OUTDATED("180 EUR"))
Q("en-002", "Up to what estimated trip cost can my line manager approve a business trip without the department head?",
  "2,500 EUR", ["2,500 EUR", "2500 EUR", "up to 2,500 EUR"],
  [(V3, "2,500 EUR", "up to 2,500 EUR: your line manager approves")],
  topic="travel", **OUTDATED("1,500 EUR"))
Q("en-003", "From which flight duration am I allowed to book premium economy?",
  "more than 6 hours", ["more than 6 hours", "over 6 hours", "6 hours"],
  [(V3, "more than 6 hours", "Premium economy for flights with a scheduled duration of more than 6 hours")],
  topic="travel", **OUTDATED("more than 9 hours"))
Q("en-004", "How many days after a trip ends do I have to submit my expense claim?",
  "60 days", ["60 days", "within 60 days"],
  [(V3, "60 days", "Submit your claim within 60 days after the trip ends"),
   ("expense-faq-en", "60 days", "60 days after the trip ends (or after the purchase")],
  topic="expenses", **OUTDATED("30 days"))
Q("en-005", "What is the per diem for a full day away from home on a business trip within Germany?",
  "32 EUR", ["32 EUR", "32 euros", "32"],
  [(V3, "32 EUR", "| Germany, full calendar day away from home (24 hours) | 32 EUR |")],
  topic="travel", **OUTDATED("28 EUR"))
Q("en-006", "What is the per-person limit for client entertainment?",
  "75 EUR per person", ["75 EUR", "75 EUR per person", "750 CNY per person in China"],
  [(V3, "75 EUR per person", "reimbursed up to 75 EUR per person (750 CNY"),
   ("expense-faq-en", "75 EUR per person", "capped at 75 EUR per person")],
  topic="expenses", **OUTDATED("60 EUR per person"))
Q("en-007", "Above what amount do I need an itemised receipt for an expense?",
  "15 EUR", ["15 EUR", "above 15 EUR", "15 EUR (or 100 CNY)"],
  [(V3, "15 EUR (or 100 CNY)", "every expense above 15 EUR (or 100 CNY)"),
   ("expense-faq-en", "15 EUR", "Receipts are needed above 15 EUR.")],
  topic="expenses", **OUTDATED("25 EUR"))
Q("en-008", "What is the hotel cap per night in Shanghai for business travellers?",
  "1,200 CNY", ["1,200 CNY", "1200 CNY", "1,200 元", "1,200 yuan"],
  [(V3, "1,200 CNY", "| Shanghai | 1,200 CNY |"), ("expense-faq-zh", "1,200 元", "上海每晚上限为 1,200 元")],
  topic="travel", **OUTDATED("1,000 CNY"))
Q("en-009", "After how many days past the end of a trip is an expense claim rejected outright?",
  "more than 90 days", ["90 days", "more than 90 days", "after 90 days"],
  [(V3, "more than 90 days", "Claims submitted more than 90 days after the trip ends are rejected"),
   ("expense-faq-en", "After 90 days", "After 90 days Kontor blocks the claim")],
  topic="expenses", **OUTDATED("more than 60 days"))
U("en-010", "Under the travel policy currently in effect, how much laundry allowance can I claim on a trip longer than five nights?",
  "outdated_only", topic="travel", passage=[(V2, "Laundry: 15 EUR per trip for trips longer than five nights.")],
  trap="outdated_version", as_of=AS_OF, outdated_doc_id=V2, outdated_answer="15 EUR per trip")
U("en-011", "What does the current travel policy reimburse for airport lounge access on long layovers?",
  "outdated_only", topic="travel",
  passage=[(V2, "Airport lounge access: up to 35 EUR per visit for layovers longer than\n  3 hours")],
  trap="outdated_version", as_of=AS_OF, outdated_doc_id=V2, outdated_answer="up to 35 EUR per visit")
Q("en-012", "How much can I claim per night if I stay with friends instead of a hotel on a business trip in Germany?",
  "25 EUR per night", ["25 EUR", "25 EUR per night", "a flat 25 EUR per night"],
  [(V3, "25 EUR per night", "a flat\n25 EUR per night")],
  topic="travel")
Q("en-013", "How many missing-receipt declarations are accepted per employee in a calendar year?",
  "three", ["three", "3", "three per calendar year"],
  [(V3, "three", "three declarations per calendar year"),
   ("expense-faq-en", "three", "at most three times per calendar year")],
  topic="expenses")
Q("en-014", "Who has to approve a business class flight?",
  "the CEO", ["the CEO", "CEO", "the CEO in writing, before booking"],
  [(V3, "CEO", "Business class only with the CEO's written approval")],
  topic="travel")
Q("en-015", "How much cash may I withdraw with the corporate card on a trip abroad?",
  "200 EUR per trip", ["200 EUR", "up to 200 EUR per trip"],
  [(V3, "200 EUR per trip", "only up to\n200 EUR per trip")],
  topic="expenses")
Q("en-016", "What is the current nightly hotel cap in Munich, and what was it under the previous version of the travel policy?",
  "240 EUR now; 190 EUR under version 2", ["240 EUR (previously 190 EUR)", "240 EUR; 190 EUR"],
  [(V3, "240 EUR", "| Munich | 240 EUR |"), (V2, "190 EUR", "| Munich | 190 EUR |")],
  topic="travel", hop=True, as_of=AS_OF)
Q("en-017", "How many business days of rail travel per year do I need before Lumenrow pays for a BahnCard 50?",
  "more than 8 business days", ["more than 8", "more than 8 business days", "8"],
  [(V3, "8 business days", "than 8 business days per year; request it"),
   ("expense-faq-en", "more than 8 business days", "If you travel by rail on more than 8 business days per year")],
  topic="travel")
Q("en-018", "If my expense claim is approved on the 25th of the month, when is it paid out?",
  "with the next month's payroll", ["with the next month's payroll", "next month's payroll",
                                    "with the following month's payroll"],
  [("expense-faq-en", "the next month's payroll", "Claims approved after the 20th are paid with the next month's payroll"),
   (V3, "the following month's payroll", "paid with the following month's payroll")],
  topic="expenses")
Q("en-019", "Which exchange rate is used for expenses I paid in cash in a foreign currency?",
  "the ECB reference rate on the day of the transaction",
  ["the ECB reference rate on the day of the transaction", "ECB reference rate"],
  [("expense-faq-en", "ECB reference rate on the day of the transaction")],
  topic="expenses")
Q("en-020", "Can I claim my home office chair as an expense? If not, which budget covers it and how large is that budget?",
  "No; it comes out of the remote work policy's one-off home-office equipment budget of 600 EUR",
  ["the remote work policy's equipment budget of 600 EUR", "the home-office equipment budget (600 EUR)"],
  [("expense-faq-en", "remote work policy's equipment budget"),
   ("remote-work-policy", "600 EUR", "one-off budget of 600 EUR")],
  topic="expenses", hop=True)

# ----- SDK: API reference, changelog, source --------------------------------
API, CHG = "sdk-api-reference", "sdk-changelog"
Q("en-021", "What is the default burst of RateLimiter?",
  "20", ["20", "20 tokens", "burst=20"],
  [(API, "20", "| `burst` | `int` | `20` |"), (API, "burst=20", "RateLimiter(rate, burst=20, window_s=1.0"),
   ("src-ratelimit-py", "20", "DEFAULT_BURST = 20")],
  topic="sdk")
Q("en-022", "What is the default burst of RateLimiter, and in which SDK release was it raised to that value?",
  "20; raised in release 2.6.0", ["20, raised in 2.6.0", "20 (since 2.6.0)"],
  [(API, "20", "| `burst` | `int` | `20` |"), (CHG, "2.6.0", "## [2.6.0] — 2024-11-05")],
  topic="sdk", hop=True)
Q("en-023", "What was RateLimiter's default burst before it was raised?",
  "10", ["10", "10 tokens"],
  [(CHG, "10", "`burst` raised from 10 to 20")],
  topic="sdk")
Q("en-024", "What is the default request timeout of the Python SDK Client?",
  "30 seconds", ["30 seconds", "30.0", "30 s", "30"],
  [(API, "30.0", "| `timeout` | `float` | `30.0` |"), (CHG, "30 seconds", "raised from 10 to 30 seconds")],
  topic="sdk")
Q("en-025", "Which environment variable does the Python SDK read the API key from when none is passed?",
  "LUMENROW_API_KEY", ["LUMENROW_API_KEY"],
  [(API, "LUMENROW_API_KEY", "read from the `LUMENROW_API_KEY` environment variable"),
   (CHG, "LUMENROW_API_KEY", "`Client` reads `LUMENROW_API_KEY` when")],
  topic="sdk")
Q("en-026", "Which HTTP status does the Beacon API return when a batch is larger than 5 MiB?",
  "413", ["413", "413 Payload Too Large", "PayloadTooLargeError"],
  [(API, "413", "| 413 | `PayloadTooLargeError` |")],
  topic="api")
Q("en-027", "What is the maximum number of events in a single batch request?",
  "500", ["500", "500 events"],
  [(API, "500 events", "may\ncontain at most 500 events"), ("src-ingest-handler-go", "500", "MaxEventsPerBatch = 500"),
   ("product-faq-en", "500 events", "Batches can hold up to 500 events")],
  topic="api")
Q("en-028", "How many API requests per second does the Growth plan allow?",
  "200", ["200", "200 requests per second"],
  [(API, "200", "| Growth | 200 | 50 million |"), ("pricing-sheet-2025", "200", "| API requests per second | 50 | 200 |")],
  topic="api")
Q("en-029", "Does RateLimiter.try_acquire block when there are not enough tokens?",
  "No, it never blocks (it returns False)", ["No", "never blocks", "returns False"],
  [(API, "never blocks", "Takes the tokens if available right now; never blocks.")],
  topic="sdk")
Q("en-030", "Which parameter replaced `window` in RateLimiter?",
  "window_s", ["window_s", "`window_s`"],
  [(CHG, "window_s", "renamed to `RateLimiter(window_s=...)`"),
   (API, "window_s", "| `window_s` | `float` | `1.0` | Length of the refill window")],
  topic="sdk")
Q("en-031", "What exception does RateLimiter raise if you request more tokens than its burst in one call?",
  "ValueError", ["ValueError"],
  [(API, "ValueError", "than `burst` in one call raises `ValueError`"),
   ("src-ratelimit-py", "ValueError", 'raise ValueError(f"cannot acquire')],
  topic="sdk")
Q("en-032", "Which SDK release added Parquet exports, and what is the longest date range a single export can cover?",
  "3.1.0; at most 31 days", ["3.1.0 and 31 days"],
  [(CHG, "3.1.0", "## [3.1.0] — 2025-10-20"), (API, "31 days", "may span at most 31 days")],
  topic="sdk", hop=True)
Q("en-033", "What is the maximum size of a single event?",
  "32 KB", ["32 KB", "32 KB after JSON encoding"],
  [(API, "32 KB", "A single event may be at most 32 KB"), ("product-faq-en", "32 KB", "32 KB after JSON encoding. Batches")],
  topic="api")
Q("en-034", "For how long does the server remember event IDs to drop duplicates?",
  "24 hours", ["24 hours", "24 h"],
  [(API, "24 hours", "already\nseen in the last 24 hours"), ("src-ingest-handler-go", "24 * time.Hour", "DedupeWindow = 24 * time.Hour")],
  topic="api")
Q("en-035", "When was version 3.0.0 of the Python SDK released?",
  "2025-06-02", ["2025-06-02", "2 June 2025"],
  [(CHG, "2025-06-02", "## [3.0.0] — 2025-06-02")],
  topic="sdk")
Q("en-036", "Which Python version did SDK 3.0.0 stop supporting?",
  "Python 3.8", ["Python 3.8", "3.8"],
  [(CHG, "Python 3.8", "Dropped support for Python 3.8.")],
  topic="sdk")
Q("en-037", "Which Python SDK version stopped writing API keys to debug logs?",
  "2.7.1", ["2.7.1", "version 2.7.1"],
  [(CHG, "2.7.1", "## [2.7.1] — 2025-03-06")],
  topic="security", trap="restricted_doc", restricted_doc_id="postmortem-2025-03-api-key-exposure")
Q("en-038", "Which HTTP header carries the Beacon webhook signature?",
  "X-Lumenrow-Signature", ["X-Lumenrow-Signature", "x-lumenrow-signature"],
  [(API, "X-Lumenrow-Signature", "Checks the `X-Lumenrow-Signature` header"),
   ("src-webhook-verify-ts", "x-lumenrow-signature", 'SIGNATURE_HEADER = "x-lumenrow-signature"')],
  topic="sdk")
Q("en-039", "What is the default tolerance for the age of a webhook signature?",
  "300 seconds", ["300 seconds", "300 s", "5 minutes", "300"],
  [("src-webhook-verify-ts", "300", "DEFAULT_TOLERANCE_SECONDS = 300"),
   (CHG, "300 seconds", "default tolerance 300 seconds"), (API, "300", "tolerance_s: int = 300")],
  topic="sdk")
Q("en-040", "What error class does the Node SDK's verifyWebhook throw for a missing signature header, and in which Python SDK release did the equivalent verify_webhook helper appear?",
  "WebhookVerificationError; Python SDK 2.7.0", ["WebhookVerificationError and 2.7.0"],
  [("src-webhook-verify-ts", "WebhookVerificationError", "throw new WebhookVerificationError(`missing"),
   (CHG, "2.7.0", "## [2.7.0] — 2025-02-10")],
  topic="sdk", hop=True)
Q("en-041", "What HTTP status does beacon-ingest return when a batch is accepted?",
  "202 Accepted", ["202", "202 Accepted", "StatusAccepted"],
  [("src-ingest-handler-go", "StatusAccepted", "writeJSON(w, http.StatusAccepted, resp)")],
  topic="api")
Q("en-042", "How far in the future may an event timestamp be before beacon-ingest rejects the event?",
  "10 minutes", ["10 minutes"],
  [("src-ingest-handler-go", "10 minutes", "timestamp more than 10 minutes in the future")],
  topic="api")
Q("en-043", "What is the maximum length of an event name?",
  "128", ["128", "128 bytes", "128 characters"],
  [("src-ingest-handler-go", "128", "MaxEventNameLen = 128"), (API, "128 characters", "longer than 128 characters")],
  topic="api")
Q("en-044", "What timeout bounds the hand-off from beacon-ingest to the queue?",
  "2 seconds", ["2 seconds", "2 s", "2 * time.Second"],
  [("src-ingest-handler-go", "2 * time.Second", "ProduceTimeout = 2 * time.Second")],
  topic="api")

# ----- onboarding, security, on-call, IT -------------------------------------
Q("en-045", "How long is the probation period for engineers in Berlin?",
  "six months", ["six months", "6 months"],
  [("onboarding-engineering-berlin", "six months", "The probation period is six months.")],
  topic="onboarding")
Q("en-046", "Where is the team lunch on an engineer's first day in Berlin?",
  "Markthalle Neun", ["Markthalle Neun"],
  [("onboarding-engineering-berlin", "Markthalle Neun")],
  topic="onboarding")
Q("en-047", "Which make target runs only the unit tests in the beacon monorepo?",
  "make test-fast", ["make test-fast", "test-fast"],
  [("onboarding-engineering-berlin", "make test-fast")],
  topic="onboarding")
Q("en-048", "What is the 24/7 security hotline number?",
  "+49 30 5557 0199", ["+49 30 5557 0199"],
  [("security-incident-runbook", "+49 30 5557 0199")],
  topic="security")
Q("en-049", "Within how long must a SEV1 security incident be acknowledged?",
  "15 minutes", ["15 minutes"],
  [("security-incident-runbook", "15 minutes", "| 15 minutes | Every 30 minutes |")],
  topic="security", role="security")
Q("en-050", "How quickly must a personal data breach be reported to the supervisory authority?",
  "within 72 hours", ["72 hours", "within 72 hours"],
  [("security-incident-runbook", "within 72 hours", "within 72 hours after Lumenrow")],
  topic="security", role="security")
Q("en-051", "Where should I forward a suspicious email?",
  "phishing@lumenrow.io", ["phishing@lumenrow.io", "the Report phishing button in Gmail"],
  [("security-incident-runbook", "phishing@lumenrow.io")],
  topic="security")
Q("en-052", "Who becomes incident commander of a SEV1 security incident once they join, and what is that person's name?",
  "the CISO, Tobias Reinhardt", ["Tobias Reinhardt", "the CISO (Tobias Reinhardt)"],
  [("security-incident-runbook", "the CISO takes over as incident commander"),
   ("security-incident-runbook", "Tobias Reinhardt", "Security team (Tobias Reinhardt, CISO)")],
  topic="security", role="security", hop=True)
Q("en-053", "Within how many business days must a post-mortem be written after a SEV2 security incident?",
  "10 business days", ["10 business days", "10"],
  [("security-incident-runbook", "10", "SEV1 and SEV2 within 10")],
  topic="security", role="security")
Q("en-054", "How long is security incident evidence retained?",
  "three years after the incident is closed", ["three years", "3 years", "3 years after closure"],
  [("security-incident-runbook", "three years after the incident is closed"),
   ("data-retention-policy", "3 years after closure", "| Incident evidence | 3 years after closure |")],
  topic="security")
Q("en-055", "How quickly must the primary on-call engineer acknowledge a P1 page for the ingestion pipeline?",
  "within 5 minutes", ["5 minutes", "within 5 minutes"],
  [("oncall-runbook-ingest", "within 5 minutes", "acknowledge a P1 page within 5 minutes")],
  topic="oncall")
Q("en-056", "After how many minutes does an unacknowledged P1 page escalate to the engineering manager on duty?",
  "20 minutes", ["20 minutes", "after 20 minutes"],
  [("oncall-runbook-ingest", "20 minutes", "manager on duty\nafter 20 minutes")],
  topic="oncall")
Q("en-057", "What consumer lag triggers the IngestConsumerLagHigh alert?",
  "more than 500,000 messages for 10 minutes", ["500,000 messages", "500,000", "above 500,000 messages for 10 minutes"],
  [("oncall-runbook-ingest", "500,000 messages", "above 500,000 messages for 10 minutes"),
   ("arch-review-2025-09-18", "500,000 messages", "threshold is now 500,000 messages")],
  topic="oncall")
Q("en-058", "How many partitions does the events.v3 Kafka topic have per region?",
  "48", ["48", "48 partitions"],
  [("oncall-runbook-ingest", "48 partitions", "(48 partitions per region)")],
  topic="oncall")
Q("en-059", "What is session.timeout.ms set to for the beacon-writer consumers?",
  "45 seconds", ["45 seconds", "45 s", "45 秒"],
  [("oncall-runbook-ingest", "45 seconds", "`session.timeout.ms` is 45 seconds"),
   ("postmortem-2025-08-14-ingest-lag", "45 秒", "统一调整为 45 秒")],
  topic="oncall")
Q("en-060", "When does the on-call handover happen?",
  "every Wednesday at 10:00 local time", ["every Wednesday at 10:00", "Wednesday 10:00"],
  [("oncall-runbook-ingest", "every Wednesday at 10:00 local time"),
   ("oncall-policy-shanghai", "每周三 10:00", "每周三 10:00 交接")],
  topic="oncall")
Q("en-061", "What is the minimum password length at Lumenrow?",
  "14 characters", ["14 characters", "14"],
  [("it-handbook", "14 characters", "at least 14 characters long")],
  topic="it")
Q("en-062", "How many YubiKeys does every employee receive on day one?",
  "two", ["two", "2", "two YubiKey 5 NFC security keys"],
  [("it-handbook", "two", "Every employee receives two\n  YubiKey")],
  topic="it")
Q("en-063", "After how many days do personal Beacon API keys expire?",
  "90 days", ["90 days", "90"],
  [("it-handbook", "90 days", "expire automatically after 90 days"),
   ("data-classification-zh", "90 天", "有效期最长 90 天")],
  topic="it")
Q("en-064", "Which laptop do engineers get?",
  'MacBook Pro 14" (M3 Pro, 36 GB RAM)', ['MacBook Pro 14" (M3 Pro, 36 GB RAM)', 'MacBook Pro 14"', "MacBook Pro 14-inch M3 Pro"],
  [("it-handbook", 'MacBook Pro 14" (M3 Pro, 36 GB RAM)')],
  topic="it")
Q("en-065", "How often are MacBook Air laptops replaced?",
  "every 4 years", ["4 years", "every 4 years"],
  [("it-handbook", "4 years", "(M3, 16 GB RAM) | 4 years |")],
  topic="it")
Q("en-066", "Within how many days of release must macOS security updates be installed?",
  "14 days", ["14 days", "within 14 days"],
  [("it-handbook", "14 days", "within 14 days of release")],
  topic="it")

# ----- data retention, pricing, product -------------------------------------
RET, PRICE = "data-retention-policy", "pricing-sheet-2025"
Q("en-067", "How long are raw events kept on the Growth plan?",
  "13 months", ["13 months"],
  [(RET, "13 months", "| Raw events | 90 days | 13 months |"), (PRICE, "13 months", "| Raw event retention | 90 days | 13 months |"),
   ("product-faq-en", "13 months", "90 days on Starter, 13 months on Growth")],
  topic="data_retention")
Q("en-068", "How long are application logs retained?",
  "30 days", ["30 days"],
  [(RET, "30 days", "| Application logs | 30 days |")],
  topic="data_retention")
Q("en-069", "How long are daily database backups kept?",
  "35 days", ["35 days"],
  [(RET, "35 days", "Daily backups are kept for\n35 days.")],
  topic="data_retention")
Q("en-070", "How long does Lumenrow keep applications from rejected job candidates?",
  "6 months after rejection", ["6 months", "6 months after rejection", "six months"],
  [(RET, "6 months after rejection")],
  topic="data_retention")
Q("en-071", "On the Starter plan, how long are raw events retained, and what is the monthly fee with annual billing?",
  "90 days; 490 EUR per month", ["90 days and 490 EUR"],
  [(RET, "90 days", "| Raw events | 90 days |"), (PRICE, "490 EUR", "| Monthly fee (annual billing) | 490 EUR |")],
  topic="pricing", hop=True)
Q("en-072", "What is the overage price per additional million events on the Growth plan?",
  "8 EUR", ["8 EUR", "8 euros"],
  [(PRICE, "8 EUR", "| 12 EUR | 8 EUR |")],
  topic="pricing")
Q("en-073", "How much does SAML SSO cost on the Growth plan?",
  "250 EUR/month", ["250 EUR/month", "250 EUR per month", "add-on, 250 EUR/month"],
  [(PRICE, "250 EUR/month")],
  topic="pricing")
Q("en-074", "What discount do non-profit organisations get?",
  "30% on Starter and Growth", ["30%", "30% on Starter and Growth"],
  [(PRICE, "30% on Starter and Growth")],
  topic="pricing")
Q("en-075", "How long is the Beacon free trial?",
  "14 days", ["14 days"],
  [(PRICE, "14 days", "trialled for 14 days"), ("product-faq-en", "14 days", "Yes, 14 days, up to 1 million events")],
  topic="product")
Q("en-076", "How much does an extra workspace cost on the Growth plan?",
  "150 EUR / month", ["150 EUR / month", "150 EUR per month", "150 EUR"],
  [(PRICE, "150 EUR / month")],
  topic="pricing")
Q("en-077", "In which AWS region is EU customer data stored?",
  "eu-central-1 (Frankfurt)", ["eu-central-1", "Frankfurt", "AWS eu-central-1 (Frankfurt)"],
  [("product-faq-en", "eu-central-1", "in AWS `eu-central-1` (Frankfurt)")],
  topic="product")
Q("en-078", "Since when has Lumenrow been ISO/IEC 27001 certified?",
  "2023", ["2023", "since 2023"],
  [("product-faq-en", "2023", "(since 2023)")],
  topic="product")

# ----- meeting notes, engineering process -----------------------------------
ARCH = "arch-review-2025-09-18"
Q("en-079", "When will the /v1 API be switched off?",
  "2026-03-31", ["2026-03-31", "31 March 2026"],
  [(ARCH, "2026-03-31", "switch off `/v1` on\n**2026-03-31**"), ("planning-2026-kickoff", "2026 年 3 月 31 日", "于 2026 年 3 月 31 日下线")],
  topic="api")
Q("en-080", "What will /v1 endpoints return after the switch-off?",
  "HTTP 410 Gone", ["410 Gone", "410", "HTTP 410 Gone"],
  [(ARCH, "HTTP 410 Gone")],
  topic="api")
Q("en-081", "Which ClickHouse version did the architecture review choose for production?",
  "ClickHouse 24.8 LTS", ["24.8 LTS", "ClickHouse 24.8 LTS", "24.8"],
  [(ARCH, "ClickHouse 24.8 LTS", "upgrade production to ClickHouse 24.8 LTS")],
  topic="engineering")
Q("en-082", "What prefix do new live API keys carry?",
  "lmr_live_", ["lmr_live_"],
  [(ARCH, "lmr_live_")],
  topic="security")
Q("en-083", "Why are API keys getting a recognisable prefix?",
  "so that GitHub secret scanning and our own pre-commit hooks can detect leaked keys",
  ["so GitHub secret scanning and pre-commit hooks can detect leaked keys", "to detect leaked keys"],
  [(ARCH, "so that GitHub secret scanning and our own pre-commit hooks can detect leaked keys")],
  topic="security", trap="restricted_doc", restricted_doc_id="postmortem-2025-03-api-key-exposure")
Q("en-084", "Who owns the ClickHouse upgrade in Shanghai, and when is the Shanghai maintenance window?",
  "李娜 (Li Na); 22 October 2025, 22:00 to 02:00 the next day",
  ["李娜, 10 月 22 日 22:00–次日 2:00", "Li Na; 2025-10-22 22:00–02:00"],
  [(ARCH, "李娜", "| Production upgrade to ClickHouse 24.8, Shanghai | 李娜 |"),
   ("weekly-sh-eng-2025-10-13", "10 月 22 日（周三）22:00–次日 2:00")],
  topic="engineering", hop=True)
Q("en-085", "How many approvals does a pull request touching billing/ need?",
  "2", ["2", "two"],
  [("code-review-guidelines", "2", "| `auth/`, `billing/`, `crypto/` | 2 |")],
  topic="engineering")
Q("en-086", "Above how many changed lines does a pull request need a second reviewer?",
  "400", ["400", "400 changed lines", "over 400 changed lines"],
  [("code-review-guidelines", "400", "Pull requests over 400 changed lines need a second reviewer")],
  topic="engineering", trap="restricted_doc", restricted_doc_id="postmortem-2025-03-api-key-exposure")
Q("en-087", "How soon should I expect a first code review?",
  "within one business day", ["one business day", "within one business day"],
  [("code-review-guidelines", "one business day", "First review within **one business day**")],
  topic="engineering")
Q("en-088", "How many days a year can a Berlin employee work from another EU country without prior approval?",
  "30 working days", ["30 working days", "30 days", "30"],
  [("remote-work-policy", "30 working days", "Up to 30 working days per calendar year")],
  topic="remote_work")
Q("en-089", "What monthly internet allowance do home-office workers in Germany get?",
  "20 EUR", ["20 EUR", "20 EUR per month"],
  [("remote-work-policy", "20 EUR", "monthly internet allowance of 20 EUR")],
  topic="remote_work")
Q("en-090", "Which weekdays are team days in the Berlin office?",
  "Tuesday and Thursday", ["Tuesday and Thursday"],
  [("remote-work-policy", "Tuesday and Thursday")],
  topic="remote_work")
Q("en-091", "What is the first-response time for a P1 ticket from a Growth customer?",
  "1 hour (24/7)", ["1 hour", "1 hour (24/7)", "one hour"],
  [("support-sla", "1 hour (24/7)")],
  topic="support")
Q("en-092", "A Growth customer had 98.5% uptime last month. What service credit do they get?",
  "25% of the monthly fee", ["25%", "25% of the monthly fee"],
  [("support-sla", "25%", "| Below 99.0%, at least 95.0% | 25% |")],
  topic="support")
Q("en-093", "How often do SDK releases ship?",
  "every second Tuesday", ["every second Tuesday", "every two weeks"],
  [("release-process", "every second Tuesday")],
  topic="engineering")
Q("en-094", "When is the year-end deploy freeze?",
  "from 20 December to 2 January", ["20 December to 2 January", "from 20 December to 2 January"],
  [("release-process", "from 20 December to 2 January")],
  topic="engineering")
Q("en-095", "How long is a major SDK version supported after the next major version comes out?",
  "18 months", ["18 months"],
  [("release-process", "18 months"), ("planning-2026-kickoff", "18 个月", "3.x 继续维护 18 个月")],
  topic="sdk")

# ----- restricted documents (asked by the role that may read them) ----------
SAL, MA, PM = "salary-bands-2025", "ma-memo-project-kestrel", "postmortem-2025-03-api-key-exposure"
Q("en-096", "What is the salary band midpoint for an L3 Senior Engineer in Berlin?",
  "85,500 EUR", ["85,500", "85,500 EUR", "85500"],
  [(SAL, "85,500", "| L3 | Senior Engineer | 76,000 | 85,500 |")],
  topic="compensation", role="hr")
Q("en-097", "What is the target bonus for Staff Engineers?",
  "12% of base", ["12%", "12% of base salary"],
  [(SAL, "12%", "| L4–L5, M1 | 12% |")],
  topic="compensation", role="hr")
Q("en-098", "Who has to approve a job offer above the band midpoint?",
  "the Head of People", ["the Head of People", "Head of People", "Miriam Schuster"],
  [(SAL, "Head of People", "offers above the midpoint need approval from the Head of People")],
  topic="compensation", role="hr")
Q("en-099", "What enterprise value is proposed for the acquisition of Fieldnote Analytics?",
  "14.5 million EUR", ["14.5 million EUR", "EUR 14.5 million", "14.5M EUR"],
  [(MA, "14.5 million EUR")],
  topic="m_and_a", role="exec")
Q("en-100", "What is Fieldnote Analytics' ARR?",
  "2.1 million EUR", ["2.1 million EUR", "EUR 2.1 million"],
  [(MA, "2.1 million EUR", "| ARR (2025-09-30) | 2.1 million EUR |")],
  topic="m_and_a", role="exec")
Q("en-101", "Above what price should Lumenrow walk away from Project Kestrel, and how many months of runway would remain after paying the cash part?",
  "above 15.0 million EUR enterprise value; about 21 months of runway", ["15.0 million EUR; about 21 months"],
  [(MA, "15.0 million EUR", "up to 15.0 million EUR enterprise value"), (MA, "21", "from 27 to\n   about 21 months")],
  topic="m_and_a", role="exec", hop=True)
Q("en-102", "For how long were the customer API keys exposed in incident SEC-2025-007?",
  "up to 19 days", ["19 days", "up to 19 days"],
  [(PM, "up to 19 days")],
  topic="security", role="security")
Q("en-103", "What bug bounty was paid to the researcher who reported the API key exposure?",
  "1,500 EUR", ["1,500 EUR", "1500 EUR"],
  [(PM, "1,500 EUR")],
  topic="security", role="security")
Q("en-104", "Which customer published the CI logs that exposed API keys in March 2025?",
  "Nordhafen Logistics", ["Nordhafen Logistics"],
  [(PM, "Nordhafen Logistics")],
  topic="security", role="security")

# ----- unanswerable (English) ------------------------------------------------
U("en-105", "How many days of annual leave do employees in the Berlin office get?",
  "near_miss", topic="leave",
  passage=[("leave-policy-shanghai", "柏林公司员工的休假安排由柏林人事团队另行规定，不适用本制度。")])
U("en-106", "What is the on-call allowance per weekday for engineers in Berlin?",
  "near_miss", topic="oncall",
  passage=[("oncall-policy-shanghai", "| 工作日主值班 | 每天 200 元 |"),
           ("oncall-policy-shanghai", "柏林团队的值班安排不适用本制度。")])
U("en-107", "What is the default burst of the rate limiter in the Go SDK?",
  "near_miss", topic="sdk", passage=[(API, "RateLimiter(rate, burst=20, window_s=1.0, clock=time.monotonic)")])
U("en-108", "What is the annual training budget per employee in Berlin?",
  "near_miss", topic="training",
  passage=[("training-budget-policy", "柏林公司的培训预算按柏林人事团队的规定执行。")])
U("en-109", "What was the root cause of the May 2025 outage in the Frankfurt region?",
  "near_miss", topic="incident",
  passage=[("postmortem-2025-08-14-ingest-lag", "## 三、根本原因")])
U("en-110", "When is version 3.2.0 of the Python SDK scheduled for release?",
  "near_miss", topic="sdk", passage=[(CHG, "## [3.1.0] — 2025-10-20")])
U("en-111", "What is the guest Wi-Fi password in the Berlin office this week?",
  "near_miss", topic="it",
  passage=[("it-handbook", "guests use\n`Lumenrow-Guest`, which is isolated from everything internal.")])
U("en-112", "What is the default request timeout of the Node.js SDK?",
  "near_miss", topic="sdk", passage=[(API, "| `timeout` | `float` | `30.0` |")])
U("en-113", "Does Lumenrow provide company cars for its sales team?",
  "not_in_corpus", topic="benefits")
U("en-114", "On which stock exchange is Lumenrow listed?",
  "not_in_corpus", topic="company")

# ============================================================================
# Chinese questions
# ============================================================================
LEAVE = "leave-policy-shanghai"
Q("zh-001", "上海公司员工的婚假有几天？",
  "10 天", ["10 天", "10天", "十天"],
  [(LEAVE, "10 天", "享受婚假 10 天")],
  topic="leave")
Q("zh-002", "上海公司女员工生育可以休多少天产假？",
  "158 天", ["158 天", "158天"],
  [(LEAVE, "158 天", "享受产假 158 天")],
  topic="leave")
Q("zh-003", "男员工的配偶陪产假有几天？需要在什么时间内休完？",
  "10 天，应在配偶生育后 30 天内休完", ["10 天", "10天", "10 天，30 天内休完"],
  [(LEAVE, "陪产假 10 天，应在配偶生育后 30 天内休完")],
  topic="leave")
Q("zh-004", "在本公司工作满 3 年的员工，每年有几天福利年假？",
  "7 天", ["7 天", "7天"],
  [(LEAVE, "7 天", "| 满 2 年不满 5 年 | 7 天 |")],
  topic="leave")
Q("zh-005", "累计工作年限 12 年的员工，法定年休假是几天？",
  "10 天", ["10 天", "10天"],
  [(LEAVE, "10 天", "| 满 10 年不满 20 年 | 10 天 |")],
  topic="leave")
Q("zh-006", "累计工作 8 年、在本公司工作满 3 年的员工，一年总共有多少天年假？",
  "12 天（法定年休假 5 天 + 福利年假 7 天）", ["12 天", "12天"],
  [(LEAVE, "5 天", "| 满 1 年不满 10 年 | 5 天 |"), (LEAVE, "7 天", "| 满 2 年不满 5 年 | 7 天 |")],
  topic="leave", hop=True)
Q("zh-007", "当年没休完的年假可以保留到什么时候？",
  "次年 3 月 31 日", ["次年 3 月 31 日", "第二年 3 月 31 日", "3 月 31 日"],
  [(LEAVE, "次年 3 月 31 日", "可以结转至次年 3 月 31 日")],
  topic="leave")
Q("zh-008", "上海员工每年有几天全薪病假？",
  "5 天", ["5 天", "5天"],
  [(LEAVE, "5 天", "享有 5 天全薪病假")],
  topic="leave")
Q("zh-009", "休 3 天以上的年假，需要提前多久申请？",
  "提前 5 个工作日", ["5 个工作日", "提前 5 个工作日"],
  [(LEAVE, "提前 5 个工作日", "须提前 5 个工作日申请")],
  topic="leave")
Q("zh-010", "请假 12 天需要哪些人审批？",
  "直属经理、部门负责人、人力资源部", ["直属经理、部门负责人、人力资源部"],
  [(LEAVE, "直属经理、部门负责人、人力资源部", "| 10 天以上 | 直属经理、部门负责人、人力资源部 |")],
  topic="leave")
Q("zh-011", "子女 3 岁以前，父母每年各有几天育儿假？",
  "5 天", ["5 天", "5天"],
  [(LEAVE, "5 天", "每人每年各享受育儿假 5 天")],
  topic="leave")
Q("zh-012", "7 月 1 日入职、累计工作 6 年的员工，当年的法定年休假按几天算？",
  "2 天", ["2 天", "2天"],
  [(LEAVE, "2 天", "按 2 天计算")],
  topic="leave")
Q("zh-013", "事假一年最多可以请多少天？",
  "10 天", ["10 天", "全年累计不超过 10 天"],
  [(LEAVE, "10 天", "全年累计不超过 10 天")],
  topic="leave")

# ----- 报销与差旅 ---------------------------------------------------------------
FAQZH = "expense-faq-zh"
Q("zh-014", "现在去柏林出差，酒店每晚最多能报销多少？",
  "220 欧元", ["220 欧元", "220 EUR", "220"],
  [(FAQZH, "220 欧元", "柏林每晚上限为 220 欧元"), (V3, "220 EUR", "| Berlin | 220 EUR |")],
  topic="travel", **OUTDATED("180 EUR"))
Q("zh-015", "在上海出差住酒店，每晚的标准是多少？",
  "1,200 元", ["1,200 元", "1200 元", "1,200 CNY"],
  [(FAQZH, "1,200 元", "上海每晚上限为 1,200 元"), (V3, "1,200 CNY", "| Shanghai | 1,200 CNY |")],
  topic="travel", **OUTDATED("1,000 CNY"))
Q("zh-016", "上海员工在国内出差，全天的出差补助是多少？",
  "每天 200 元", ["200 元", "每天 200 元", "200 CNY"],
  [(FAQZH, "200 元", "全天补助为每天 200 元"), (V3, "200 CNY", "| Mainland China, full day (Shanghai-employed staff) | 200 CNY |")],
  topic="travel", **OUTDATED("150 CNY"))
Q("zh-017", "出差申请的预计费用在多少以内，只需要直属经理审批？",
  "2,500 欧元", ["2,500 欧元", "2500 欧元", "2,500 EUR"],
  [(FAQZH, "2,500 欧元", "预计总费用不超过 2,500 欧元"), (V3, "2,500 EUR", "up to 2,500 EUR: your line manager approves")],
  topic="travel", **OUTDATED("1,500 EUR"))
Q("zh-018", "出差结束后，报销单最晚要在多少天内提交？",
  "60 天", ["60 天", "60天"],
  [(FAQZH, "60 天", "出差结束（或费用发生）后 60 天内提交")],
  topic="expenses", **OUTDATED("30 days"))
Q("zh-019", "在国内请客户吃饭，每人的报销标准是多少？",
  "每人不超过 750 元", ["750 元", "每人不超过 750 元", "750 CNY"],
  [(FAQZH, "750 元", "每人不超过 750 元")],
  topic="expenses")
Q("zh-020", "加班后打车回家，单次最多能报销多少？",
  "150 元", ["150 元", "150元"],
  [(FAQZH, "150 元", "单次上限 150 元")],
  topic="expenses")
Q("zh-021", "工作日加班餐的报销标准是多少？",
  "每人每次不超过 50 元", ["50 元", "每人每次不超过 50 元"],
  [(FAQZH, "每人每次不超过 50 元")],
  topic="expenses")
Q("zh-022", "开发票时公司的纳税人识别号是多少？",
  "91310106MA1K4L7Q2X", ["91310106MA1K4L7Q2X"],
  [(FAQZH, "91310106MA1K4L7Q2X")],
  topic="expenses")
Q("zh-023", "每月几号之前审批通过的报销单会随当月工资发放？",
  "20 日（含）之前", ["20 日", "20号", "每月 20 日"],
  [(FAQZH, "20 日（含）", "每月 20 日（含）之前审批通过")],
  topic="expenses")
Q("zh-024", "单笔 80 元的费用报销时必须附发票吗？",
  "不需要，100 元及以下可以不附发票，写明用途即可", ["不需要", "不必附发票"],
  [(FAQZH, "单笔金额在 100 元及以下的费用可以不附发票")],
  topic="expenses")
U("zh-025", "按现行差旅制度，转机时使用机场贵宾室的费用最多可以报销多少？",
  "outdated_only", topic="travel",
  passage=[(V2, "Airport lounge access: up to 35 EUR per visit for layovers longer than\n  3 hours")],
  trap="outdated_version", as_of=AS_OF, outdated_doc_id=V2, outdated_answer="up to 35 EUR per visit")

# ----- 值班 ---------------------------------------------------------------------
ONC = "oncall-policy-shanghai"
Q("zh-026", "上海工作日主值班的补贴是每天多少钱？",
  "每天 200 元", ["200 元", "每天 200 元"],
  [(ONC, "每天 200 元", "| 工作日主值班 | 每天 200 元 |")],
  topic="oncall")
Q("zh-027", "法定节假日做主值班，每天补贴多少？",
  "每天 600 元", ["600 元", "每天 600 元"],
  [(ONC, "每天 600 元")],
  topic="oncall")
Q("zh-028", "副值班的补贴怎么算？",
  "按主值班标准的 50% 发放", ["主值班标准的 50%", "50%"],
  [(ONC, "按主值班标准的 50% 发放")],
  topic="oncall")
Q("zh-029", "值班时夜间处理告警累计超过 3 小时，可以调休多久？",
  "次日可调休一天", ["一天", "1 天", "次日调休一天"],
  [(ONC, "一天", "超过 3 小时的，次日可调休一天")],
  topic="oncall")
Q("zh-030", "新员工入职多久以后才进入值班轮换？",
  "入职满 8 周后", ["8 周", "满 8 周"],
  [(ONC, "8 周", "新员工入职满 8 周后"), ("weekly-sh-eng-2025-10-13", "8 周", "按制度入职满 8 周后"),
   ("onboarding-engineering-berlin", "eight weeks", "no on-call shifts during your first eight weeks")],
  topic="oncall")
Q("zh-031", "值班产生的调休多长时间内必须用掉？",
  "1 个月内", ["1 个月", "一个月"],
  [(ONC, "1 个月", "调休须在 1 个月内使用")],
  topic="oncall")

# ----- 入职、IT、安全 -------------------------------------------------------------
Q("zh-032", "上海新员工入职第一天几点到前台报到？",
  "9:30", ["9:30", "上午 9:30"],
  [("onboarding-shanghai", "9:30", "第一天请于 **9:30** 到达")],
  topic="onboarding")
Q("zh-033", "上海公司的试用期是多长时间？",
  "3 个月", ["3 个月", "三个月"],
  [("onboarding-shanghai", "3 个月", "试用期为 3 个月")],
  topic="onboarding")
Q("zh-034", "补充住房公积金的缴存比例是多少？",
  "5%", ["5%"],
  [("onboarding-shanghai", "5%", "补充住房公积金，比例为 5%"), ("benefits-shanghai", "5%", "另有补充公积金 5%")],
  topic="benefits")
Q("zh-035", "新人茶话会由谁主持？",
  "黄蕾（上海公司总经理）", ["黄蕾"],
  [("onboarding-shanghai", "黄蕾", "上海公司总经理黄蕾主持")],
  topic="onboarding")
Q("zh-036", "上海办公室访客 Wi-Fi 的密码多久换一次？",
  "每周一 9:00 更换", ["每周一", "每周一次", "每周一 9:00"],
  [("it-guide-shanghai", "密码每周一 9:00 更换")],
  topic="it")
Q("zh-037", "测试设备和样机应该连哪个 Wi-Fi？",
  "Lumenrow-Lab", ["Lumenrow-Lab"],
  [("it-guide-shanghai", "Lumenrow-Lab")],
  topic="it")
Q("zh-038", "上海办公室的打印机在哪里？",
  "12 楼茶水间旁边", ["12 楼茶水间旁边", "茶水间旁边"],
  [("it-guide-shanghai", "12 楼茶水间旁边")],
  topic="it")
Q("zh-039", "上海 IT 服务台的服务时间是什么？",
  "工作日 9:00–18:30", ["工作日 9:00–18:30", "9:00–18:30"],
  [("it-guide-shanghai", "工作日 9:00–18:30")],
  topic="it")
Q("zh-040", "笔记本电脑丢了，需要在多长时间内报告？",
  "1 小时内", ["1 小时内", "一小时内", "one hour"],
  [("it-guide-shanghai", "1 小时内", "请在 1 小时内报告"), ("it-handbook", "one hour", "within\none hour")],
  topic="it")
Q("zh-041", "员工薪酬信息属于哪个信息级别？",
  "严格机密（Restricted）", ["严格机密", "Restricted", "严格机密（Restricted）"],
  [("data-classification-zh", "严格机密（Restricted）")],
  topic="security")
Q("zh-042", "向外部发送机密信息时，加密链接的有效期最长是多少天？",
  "7 天", ["7 天", "7天"],
  [("data-classification-zh", "7 天", "链接有效期不超过 7 天")],
  topic="security")
Q("zh-043", "柏林的同事可以直接查询中国区的客户数据吗？",
  "不可以，应由上海同事操作并共享脱敏后的结果", ["不可以", "不能"],
  [("data-classification-zh", "不得由柏林的同事直接查询")],
  topic="security")

# ----- 产品与价格 -----------------------------------------------------------------
Q("zh-044", "中国区的 API 地址是什么？",
  "api.lumenrow.cn", ["api.lumenrow.cn"],
  [("product-faq-zh", "api.lumenrow.cn", "API 地址为 api.lumenrow.cn"),
   (API, "api.lumenrow.cn", "`\"cn\"` sends to `api.lumenrow.cn`")],
  topic="product")
Q("zh-045", "中国区是什么时候通过等保三级测评的？",
  "2024 年 11 月", ["2024 年 11 月", "2024年11月"],
  [("product-faq-zh", "2024 年 11 月")],
  topic="product")
Q("zh-046", "中国区客户可以用什么方式付款？",
  "对公转账，按年预付", ["对公转账"],
  [("product-faq-zh", "对公转账", "通过对公转账付款")],
  topic="product")
Q("zh-047", "我们开具的增值税专用发票税率是多少？",
  "6%", ["6%"],
  [("product-faq-zh", "6%", "税率为 6% 的增值税专用发票")],
  topic="product")
Q("zh-048", "Python SDK 从哪个版本开始支持中国区？",
  "3.0.0", ["3.0.0", "3.0.0 及以上"],
  [("product-faq-zh", "3.0.0", "需要 3.0.0 及以上版本才支持中国区"), (CHG, "3.0.0", "## [3.0.0] — 2025-06-02")],
  topic="sdk")
Q("zh-049", "中国区成长版每月多少钱？",
  "14,800 元", ["14,800 元", "14800 元", "每月 14,800 元"],
  [("pricing-cn-2025", "14,800 元")],
  topic="pricing")
Q("zh-050", "中国区入门版超出部分每 100 万条事件收费多少？",
  "90 元", ["90 元", "90元"],
  [("pricing-cn-2025", "90 元", "| 超出部分（每 100 万条） | 90 元 |")],
  topic="pricing")
Q("zh-051", "中国区私有化部署每年多少钱起？",
  "90 万元", ["90 万元", "每年 90 万元起"],
  [("pricing-cn-2025", "每年 90 万元起")],
  topic="pricing")
Q("zh-052", "中国区客户可以按月付费吗？",
  "不可以，中国区仅支持按年付费", ["不可以", "仅支持按年付费"],
  [("pricing-cn-2025", "中国区仅支持按年付费")],
  topic="pricing")
Q("zh-053", "中国区签三年合同，月费打几折？",
  "92 折", ["92 折", "九二折"],
  [("pricing-cn-2025", "92 折")],
  topic="pricing")

# ----- 事故复盘、会议纪要 -------------------------------------------------------------
PMZH, WEEK, PLAN = "postmortem-2025-08-14-ingest-lag", "weekly-sh-eng-2025-10-13", "planning-2026-kickoff"
Q("zh-054", "8 月 14 日中国区事故中，数据延迟最长达到多少分钟？",
  "95 分钟", ["95 分钟", "95分钟"],
  [(PMZH, "95 分钟")],
  topic="incident")
Q("zh-055", "8·14 摄取延迟事故影响了多少家客户？",
  "约 120 家", ["约 120 家", "120 家"],
  [(PMZH, "约 120 家")],
  topic="incident")
Q("zh-056", "8·14 事故之前，消费者的 session.timeout.ms 设置为多少？",
  "6 秒", ["6 秒", "6秒", "6 s"],
  [(PMZH, "6 秒", "`session.timeout.ms` 仅为 6 秒"), (ARCH, "6 s", "(6 s → 45 s)")],
  topic="incident")
Q("zh-057", "8·14 事故一共持续了多长时间？事故之后消费延迟告警阈值调整到了多少？",
  "2 小时 47 分钟；50 万条", ["2 小时 47 分钟，50 万条"],
  [(PMZH, "2 小时 47 分钟"), (PMZH, "50 万条", "下调到 50 万条 |")],
  topic="incident", hop=True)
Q("zh-058", "8·14 事故的事故指挥是谁？",
  "李娜", ["李娜"],
  [(PMZH, "李娜", "| 事故指挥 | 李娜（SRE） |")],
  topic="incident")
Q("zh-059", "上海区域 ClickHouse 升级的时间窗口是什么时候？",
  "10 月 22 日（周三）22:00–次日 2:00", ["10 月 22 日 22:00–次日 2:00", "2025-10-22 22:00–02:00"],
  [(WEEK, "10 月 22 日（周三）22:00–次日 2:00")],
  topic="engineering")
Q("zh-060", "新同事刘洋的导师是谁？",
  "赵雪", ["赵雪"],
  [(WEEK, "赵雪", "导师为赵雪")],
  topic="onboarding")
Q("zh-061", "私有化部署目前的 Helm chart 版本是多少？华锐物流升级到这个版本用了多长时间？",
  "5.4.2；40 分钟", ["5.4.2，40 分钟"],
  [("private-deployment-guide-zh", "5.4.2", "Helm chart `lumenrow/beacon` 5.4.2（Beacon 2025.9）"),
   (WEEK, "40 分钟", "耗时 40 分钟")],
  topic="deployment", hop=True)
Q("zh-062", "SDK 4.0 计划什么时候发布？",
  "2026 年第二季度", ["2026 年第二季度", "2026 年 Q2", "2026年二季度"],
  [(PLAN, "2026 年第二季度")],
  topic="sdk")
Q("zh-063", "2026 年中国区计划新增多少家付费客户？",
  "40 家", ["40 家", "40家"],
  [(PLAN, "40 家", "新增 40 家付费客户")],
  topic="planning")
Q("zh-064", "各部门 2026 年预算草案的提交截止日期是哪天？",
  "12 月 12 日", ["12 月 12 日", "2025-12-12"],
  [(PLAN, "12 月 12 日", "**12 月 12 日前**"), (PLAN, "2025-12-12")],
  topic="planning")
Q("zh-065", "私有化部署目前支持的最高 Kubernetes 版本是多少？计划从哪个 Helm chart 版本开始支持 1.30？",
  "1.29；Helm chart 6.0", ["1.29，6.0"],
  [("private-deployment-guide-zh", "1.29", "1.27、1.28 或 1.29"), (PLAN, "6.0", "Helm chart 6.0 将支持")],
  topic="deployment", hop=True)

# ----- 考勤、采购、支持、导出、部署 -----------------------------------------------------
ATT, PROC = "attendance-policy-shanghai", "procurement-policy-shanghai"
Q("zh-066", "上海公司的核心工作时间是几点到几点？",
  "10:00–16:00", ["10:00–16:00", "10:00-16:00", "上午 10 点到下午 4 点"],
  [(ATT, "10:00–16:00", "**核心工作时间为 10:00–16:00**")],
  topic="attendance")
Q("zh-067", "上海员工每周可以远程办公几天？",
  "1 天，原则上安排在周五", ["1 天", "一天"],
  [(ATT, "1 天", "每周可以远程办公 1 天")],
  topic="attendance")
Q("zh-068", "加班攒下的调休有效期是多久？",
  "3 个月", ["3 个月", "三个月"],
  [(ATT, "3 个月", "有效期为 3 个月")],
  topic="attendance")
Q("zh-069", "法定节假日加班怎么补偿？",
  "按日工资的 300% 支付加班工资，不安排调休", ["按日工资的 300% 支付", "300%"],
  [(ATT, "按日工资的 300% 支付加班工资，不安排调休")],
  topic="attendance")
Q("zh-070", "采购一台 3 万元的设备需要谁审批？",
  "部门负责人、财务经理", ["部门负责人、财务经理", "部门负责人和财务经理"],
  [(PROC, "部门负责人、财务经理", "| 5,000 元（含）至 50,000 元 | 部门负责人、财务经理 |")],
  topic="procurement")
Q("zh-071", "单笔采购金额达到多少需要三家供应商比价？",
  "50,000 元（含）以上", ["50,000 元", "5 万元"],
  [(PROC, "50,000 元（含）以上", "单笔金额在 50,000 元（含）以上的采购")],
  topic="procurement")
Q("zh-072", "采购申请每一级审批人的审批时限是多少？",
  "3 个工作日", ["3 个工作日", "三个工作日"],
  [(PROC, "3 个工作日", "**3 个工作日**")],
  topic="procurement")
Q("zh-073", "采购一套 8 万元的软件订阅，需要哪些人审批？采购前还必须通过什么评估？",
  "部门负责人、财务经理、上海公司总经理审批；采购前须通过安全团队的安全评估",
  ["部门负责人、财务经理、上海公司总经理；安全团队的安全评估"],
  [(PROC, "部门负责人、财务经理、上海公司总经理"), (PROC, "安全团队的安全评估")],
  topic="procurement", hop=True)
Q("zh-074", "财务部每周几统一付款？",
  "每周四", ["每周四", "周四"],
  [(PROC, "每周四")],
  topic="procurement")
Q("zh-075", "我方回复后客户多少天不回复，工单就可以关闭？",
  "7 天", ["7 天", "7天"],
  [("support-ticket-guide-zh", "7 天", "7 天内未再回复")],
  topic="support")
Q("zh-076", "P2 工单一线处理多久没有进展就要升级到二线？",
  "4 个工作小时", ["4 个工作小时", "4 小时"],
  [("support-ticket-guide-zh", "4 个工作小时")],
  topic="support")
Q("zh-077", "技术支持人员可以答应客户退款吗？",
  "不可以，应转交客户成功经理处理", ["不可以", "不得承诺"],
  [("support-ticket-guide-zh", "技术支持人员不得向客户承诺退款或服务补偿")],
  topic="support")
EXP, DEP = "data-export-guide-zh", "private-deployment-guide-zh"
Q("zh-078", "导出任务的下载链接有效期是多久？",
  "24 小时", ["24 小时", "24小时"],
  [(EXP, "24 小时", "**下载链接的有效期为 24 小时**")],
  topic="export")
Q("zh-079", "一个工作区同时最多能跑几个导出任务？",
  "2 个", ["2 个", "2"],
  [(EXP, "2 个", "同时最多运行 2 个导出任务")],
  topic="export")
Q("zh-080", "导出接口的 events 参数最多可以指定多少个事件名称？",
  "50 个", ["50 个", "50"],
  [(EXP, "50 个", "只导出指定的事件名称，最多 50 个")],
  topic="export")
Q("zh-081", "导出的时间范围超过 31 天时会返回什么状态码？",
  "422", ["422"],
  [(EXP, "422", "时间范围超过 31 天时返回 422")],
  topic="export")
Q("zh-082", "私有化部署「标准」规格的每个节点需要多少内存？",
  "64 GiB", ["64 GiB", "64G"],
  [(DEP, "64 GiB", "| 标准 | 1 亿条以下 | 3 | 16 vCPU | 64 GiB |")],
  topic="deployment")
Q("zh-083", "私有化部署的离线安装包有多大？",
  "约 9.6 GB", ["约 9.6 GB", "9.6 GB"],
  [(DEP, "约 9.6 GB")],
  topic="deployment")
Q("zh-084", "私有化部署可以从 5.2.x 直接升级到 5.4.x 吗？",
  "不可以，需要先升级到 5.3.x", ["不可以", "需要先升级到 5.3.x"],
  [(DEP, "5.2.x 需要先升级到 5.3.x")],
  topic="deployment")
Q("zh-085", "values.yaml 中 kafka.partitions 的默认值是多少？",
  "24", ["24"],
  [(DEP, "24", "| `kafka.partitions` | `24` |")],
  topic="deployment")
Q("zh-086", "许可证到期以后，查询 API 会受到什么影响？",
  "到期 30 天后改为只读", ["到期 30 天后改为只读", "变为只读"],
  [(DEP, "查询 API 在到期 30 天后改为只读")],
  topic="deployment")
Q("zh-087", "私有化部署的「大型」规格需要几个节点？",
  "5", ["5", "5 个节点"],
  [(DEP, "5", "条以下 | 5 | 32 vCPU")],
  topic="deployment")

# ----- 福利、办公室、培训、绩效、术语 ---------------------------------------------------
BEN, OFF, TRN, PERF = "benefits-shanghai", "office-guide-shanghai", "training-budget-policy", "performance-review-process-zh"
Q("zh-088", "上海公司的餐补标准是多少？",
  "每个工作日 35 元", ["35 元", "每个工作日 35 元"],
  [(BEN, "每个工作日 35 元")],
  topic="benefits")
Q("zh-089", "年度体检的标准是多少？",
  "每人 1,500 元", ["1,500 元", "每人 1,500 元"],
  [(BEN, "每人 1,500 元")],
  topic="benefits")
Q("zh-090", "年度调薪从什么时候开始生效？",
  "每年 4 月 1 日", ["4 月 1 日", "每年 4 月 1 日"],
  [(BEN, "每年 4 月 1 日生效", "**年度调薪每年 4 月 1 日生效**"), (PERF, "4 月 1 日", "作为 4 月 1 日年度调薪")],
  topic="compensation", trap="restricted_doc", restricted_doc_id="salary-review-2025-shanghai")
Q("zh-091", "年终奖一般什么时候发？",
  "次年 3 月", ["次年 3 月", "3 月"],
  [(BEN, "次年 3 月", "一般在次年 3 月发放")],
  topic="compensation", trap="restricted_doc", restricted_doc_id="salary-bands-2025")
Q("zh-092", "上海公司每月几号发工资？",
  "每月 10 日，遇节假日提前", ["10 日", "每月 10 日", "10号"],
  [(BEN, "每月 10 日", "工资每月 10 日发放")],
  topic="compensation")
Q("zh-093", "EAP 心理咨询每年可以免费用几次？",
  "6 次", ["6 次", "6次"],
  [(BEN, "6 次")],
  topic="benefits")
Q("zh-094", "「外滩」会议室可以容纳多少人？",
  "20 人", ["20 人", "20"],
  [(OFF, "20 人", "| 外滩 | 20 人 |")],
  topic="office")
Q("zh-095", "工卡丢了补办要多少钱？",
  "50 元", ["50 元", "50元"],
  [(OFF, "50 元", "补办费用为 50 元")],
  topic="office")
Q("zh-096", "离上海办公室最近的地铁站是哪个？",
  "长寿路站", ["长寿路站", "长寿路"],
  [(OFF, "长寿路站")],
  topic="office")
Q("zh-097", "周末加班需要开空调，要提前多久告知？",
  "至少提前一个工作日告知行政前台", ["至少提前一个工作日", "提前一个工作日"],
  [(OFF, "至少提前一个工作日")],
  topic="office")
Q("zh-098", "上海员工每年的个人学习预算是多少？",
  "5,000 元", ["5,000 元", "5000 元"],
  [(TRN, "5,000 元", "**5,000 元**")],
  topic="training")
Q("zh-099", "认证考试没有通过，考试费还能报销吗？",
  "第一次考试费用仍可报销，补考费用自理", ["第一次可以报销", "第一次考试费用仍可报销"],
  [(TRN, "第一次考试费用仍可报销，补考费用自理")],
  topic="training")
Q("zh-100", "上海员工每年的学习预算是多少？公司承担的单笔培训费用超过多少需要签服务期协议？",
  "5,000 元；超过 20,000 元", ["5,000 元，20,000 元"],
  [(TRN, "5,000 元", "**5,000 元**"), (TRN, "20,000 元", "单笔培训费用超过 20,000 元")],
  topic="training", hop=True)
Q("zh-101", "绩效评估中工作成果的权重是多少？",
  "60%", ["60%"],
  [(PERF, "60%", "（权重 60%）")],
  topic="performance")
Q("zh-102", "对绩效评估结果有异议，要在多长时间内提出申诉？",
  "结果沟通后 10 个工作日内", ["10 个工作日内", "10 个工作日"],
  [(PERF, "10 个工作日内", "在结果沟通后 10 个工作日内")],
  topic="performance")
Q("zh-103", "绩效等级 B+ 的参考比例是多少？",
  "约 25%", ["约 25%", "25%"],
  [(PERF, "约 25%")],
  topic="performance")
Q("zh-104", "单条事件最大可以有多大？",
  "32 KB", ["32 KB", "32KB"],
  [("glossary-zh", "32 KB", "单条事件最大 32 KB"), (API, "32 KB", "A single event may be at most 32 KB")],
  topic="product")
Q("zh-105", "上海员工在哪个系统里查看假期余额？",
  "PeopleHub", ["PeopleHub"],
  [("glossary-zh", "PeopleHub", "| PeopleHub | 员工档案与假期余额（上海） |"),
   (LEAVE, "PeopleHub", "员工在 PeopleHub 的假期余额中")],
  topic="leave")

# ----- 受限文档（由有权限的角色提问） -------------------------------------------------
SR, BOARD = "salary-review-2025-shanghai", "board-summary-2025q3"
Q("zh-106", "2025 年上海公司的调薪总预算是多少？",
  "年度薪酬总额的 4.5%", ["4.5%", "年度薪酬总额的 4.5%"],
  [(SR, "4.5%", "**4.5%**")],
  topic="compensation", role="hr")
Q("zh-107", "绩效为 A、比较比率低于 0.9 的员工，调薪幅度是多少？",
  "10%–12%", ["10%–12%", "10%-12%"],
  [(SR, "10%–12%", "| A（卓越） | 10%–12% |")],
  topic="compensation", role="hr")
Q("zh-108", "晋升一级一般调薪多少？",
  "10%–15%", ["10%–15%", "10%-15%"],
  [(SR, "10%–15%", "调薪幅度一般为 10%–15%")],
  topic="compensation", role="hr")
Q("zh-109", "上海 L3 高级工程师的薪资区间中位值是多少？",
  "450,000 元", ["450,000", "450,000 元", "45 万元"],
  [(SAL, "450,000", "| L3 | 高级工程师 | 380,000 | 450,000 |")],
  topic="compensation", role="hr")
Q("zh-110", "年度调薪什么时候生效？2025 年绩效 B+、比较比率在 0.9 到 1.1 之间的员工调薪幅度是多少？",
  "4 月 1 日生效；5%–6%", ["4 月 1 日，5%–6%"],
  [(BEN, "每年 4 月 1 日生效", "**年度调薪每年 4 月 1 日生效**"), (SR, "5%–6%", "| B+（优秀） | 6%–8% | 5%–6% |")],
  topic="compensation", role="hr", hop=True)
Q("zh-111", "第三季度的净收入留存率是多少？",
  "118%", ["118%"],
  [(BOARD, "118%", "| 净收入留存率（NRR） | 118% |")],
  topic="finance", role="exec")
Q("zh-112", "按当前的消耗速度，公司现金还能支撑多久？",
  "约 27 个月", ["约 27 个月", "27 个月"],
  [(BOARD, "约 27 个月")],
  topic="finance", role="exec")
Q("zh-113", "第三季度末公司有多少名员工？准备收购的 Fieldnote 有多少名员工？",
  "238 人；Fieldnote 22 人", ["238，22", "238 人和 22 人"],
  [(BOARD, "238", "| 员工人数（期末） | 238 |"), (MA, "22", "| Employees | 22 (17")],
  topic="m_and_a", role="exec", hop=True)
Q("zh-114", "第三季度的季度收入是多少？",
  "910 万欧元", ["910 万欧元", "9.1 million EUR"],
  [(BOARD, "910 万欧元")],
  topic="finance", role="exec")
Q("zh-115", "SEC-2025-007 API 密钥泄露事件是什么时候发现的？",
  "2025-03-04 08:12 UTC", ["2025-03-04 08:12 UTC", "2025 年 3 月 4 日"],
  [(PM, "2025-03-04 08:12 UTC", "| Detected | 2025-03-04 08:12 UTC |")],
  topic="security", role="security")

# ----- 无法回答（中文） ---------------------------------------------------------------
U("zh-116", "柏林公司员工的婚假有几天？",
  "near_miss", topic="leave", passage=[(LEAVE, "享受婚假 10 天")])
U("zh-117", "上海办公室附近停车场的月租是多少钱？",
  "near_miss", topic="office", passage=[(OFF, "周边公共停车场收费约 15 元/小时")])
U("zh-118", "今年公司年会在哪家酒店举办？",
  "near_miss", topic="benefits", passage=[(BEN, "公司每年组织一次全员年会（通常在 1 月）")])
U("zh-119", "SDK 4.0 中 RateLimiter 的默认 burst 是多少？",
  "near_miss", topic="sdk", passage=[(PLAN, "移除 3.x 中已标记弃用的参数")])
U("zh-120", "2025 年柏林公司的调薪预算是多少？",
  "near_miss", topic="compensation", role="hr", passage=[(SR, "2025 年上海公司调薪总预算为年度薪酬总额的 **4.5%**")])
U("zh-121", "陪产假可以分几次休？",
  "near_miss", topic="leave", passage=[(LEAVE, "陪产假 10 天，应在配偶生育后 30 天内休完")])
U("zh-122", "中国区企业版客户的专属客户成功经理是谁？",
  "not_in_corpus", topic="support")
U("zh-123", "公司虚拟期权（VSOP）的行权价格是多少？",
  "near_miss", topic="compensation", role="hr", passage=[(SAL, "Grants vest over four years with a one-year cliff.")])
U("zh-124", "上海办公室的年度团建目的地是哪里？",
  "near_miss", topic="benefits", passage=[(BEN, "每个团队每季度有每人 300 元的团队建设预算")])
U("zh-125", "上海办公室的班车有哪些路线，几点发车？",
  "not_in_corpus", topic="office")

# ----- more English, mixed ---------------------------------------------------
Q("en-115", "What is the largest number of tokens you can request from a RateLimiter in one call?",
  "burst (20 by default)", ["burst", "the burst value", "20 by default"],
  [(API, "burst", "Requesting more tokens than `burst` in one call")],
  topic="sdk")
Q("en-116", "How long must a P1 incident last before it needs a post-mortem under the ingestion on-call runbook?",
  "more than 30 minutes", ["more than 30 minutes", "30 minutes"],
  [("oncall-runbook-ingest", "more than 30 minutes", "Any P1 that lasted more than 30 minutes")],
  topic="oncall")
Q("en-117", "Which Grafana dashboard should I open first when I get an ingestion page?",
  "Ingest overview", ["Ingest overview", "the \"Ingest overview\" dashboard"],
  [("oncall-runbook-ingest", "Ingest overview", "Open the \"Ingest overview\" Grafana dashboard")],
  topic="oncall")
Q("en-118", "Above which disk usage does the ClickHouseDiskUsage alert page as P1?",
  "90%", ["90%"],
  [("oncall-runbook-ingest", "90%", "(P2 at 80%, P1 at 90%)")],
  topic="oncall")
Q("en-119", "What is the maximum number of replicas for beacon-writer in the public cloud regions, and why?",
  "48, the partition count of events.v3", ["48", "never above the partition count of 48"],
  [("oncall-runbook-ingest", "never above the partition count of 48")],
  topic="oncall")
Q("en-120", "How many customers still used the /v1 API at the time of the architecture review, and how many at the 2026 planning kickoff?",
  "31 at the architecture review; 19 at the planning kickoff", ["31 and 19"],
  [(ARCH, "31", "from 31 customers"), (PLAN, "19 家", "目前仍有 19 家客户在使用 v1")],
  topic="api", hop=True)
Q("en-121", "How long are raw events retained on the Enterprise plan by default, and what is the maximum they can be configured to?",
  "25 months by default; up to 60 months", ["25 months, configurable up to 60 months"],
  [(RET, "25 months (configurable up to 60 months)")],
  topic="data_retention")
Q("en-122", "Within how many days after the contract end is all customer data deleted?",
  "within 30 days", ["30 days", "within 30 days"],
  [(RET, "within 30 days", "all customer data is deleted within 30 days of the")],
  topic="data_retention")
Q("en-123", "When does the Travel & Expense Policy v3 come up for its next review?",
  "2026-06-30", ["2026-06-30", "30 June 2026"],
  [(V3, "2026-06-30", "| Next review | 2026-06-30 |")],
  topic="travel")
Q("en-124", "Which version of the travel policy applies to a trip that started on 2025-06-28 but is claimed in August 2025?",
  "version 2", ["version 2", "v2"],
  [(V3, "version 2", "settled under version 2")],
  topic="travel", trap="version_boundary", as_of=AS_OF)
Q("en-125", "Who reviewed the post-mortem of the Shanghai lag incident of 2025-08-14?",
  "周明远 (Zhou Mingyuan)", ["周明远", "Zhou Mingyuan"],
  [(PMZH, "周明远", "审阅：周明远")],
  topic="incident")
Q("en-126", "What is the monthly fee of the Growth plan with monthly billing?",
  "2,175 EUR", ["2,175 EUR", "2175 EUR"],
  [(PRICE, "2,175 EUR")],
  topic="pricing")
Q("en-127", "What are the core collaboration hours for employees working from home in Germany?",
  "10:00–16:00 Berlin time", ["10:00–16:00", "10:00-16:00 Berlin time"],
  [("remote-work-policy", "10:00–16:00 Berlin time")],
  topic="remote_work")

Q("en-128", "Which period does Lumenrow's SOC 2 Type II report cover?",
  "2024-07-01 to 2025-06-30", ["2024-07-01 to 2025-06-30", "1 July 2024 to 30 June 2025"],
  [("product-faq-en", "2024-07-01 to 2025-06-30")],
  topic="security", trap="restricted_doc", restricted_doc_id="board-summary-2025q3")
Q("zh-126", "2026 年中国区收入占比的目标是多少？",
  "22%", ["22%"],
  [(PLAN, "22%", "中国区收入占比提升到 22%")],
  topic="planning", trap="restricted_doc", restricted_doc_id="board-summary-2025q3")

# Explicit kind for the few questions whose automatic classification is wrong.
KIND_OVERRIDES = {
    "zh-031": "known_error", "zh-068": "known_error",
    "en-001": "frequent", "zh-014": "frequent", "en-004": "frequent", "zh-016": "frequent",
}

# ---------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------


class BuildError(Exception):
    pass


def read_doc(doc_id: str) -> str:
    with open(DOCS_DIR / f"{doc_id}.md", encoding="utf-8", newline="") as handle:
        return handle.read()


def occurrences(haystack: str, needle: str) -> list[int]:
    out, i = [], haystack.find(needle)
    while i != -1:
        out.append(i)
        i = haystack.find(needle, i + 1)
    return out


def locate(texts: dict[str, str], qid: str, item: tuple) -> dict:
    doc_id, text, *rest = item
    anchor = rest[0] if rest else text
    if doc_id not in texts:
        raise BuildError(f"{qid}: unknown doc {doc_id!r}")
    doc = texts[doc_id]
    hits = occurrences(doc, anchor)
    if len(hits) != 1:
        what = "anchor" if rest else "answer text (give an anchor)"
        raise BuildError(f"{qid}: {what} {anchor!r} occurs {len(hits)} times in {doc_id}")
    inner = occurrences(anchor, text)
    if len(inner) != 1:
        raise BuildError(f"{qid}: answer {text!r} occurs {len(inner)} times in anchor {anchor!r}")
    start = hits[0] + inner[0]
    end = start + len(text)
    assert doc[start:end] == text
    return {"doc_id": doc_id, "start": start, "end": end, "text": text}


def paragraph(doc: str, start: int, end: int) -> tuple[int, int]:
    """Block between blank lines around [start, end)."""
    p_start = doc.rfind("\n\n", 0, start)
    p_start = 0 if p_start == -1 else p_start + 2
    p_end = doc.find("\n\n", end)
    p_end = len(doc.rstrip("\n")) if p_end == -1 else p_end
    return p_start, max(p_end, end)


def structure(doc: str, is_code: bool) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Markdown headings (line start, line end) outside code fences, and table header rows."""
    headings, table_headers = [], []
    if is_code:
        return headings, table_headers
    pos, fenced, prev_table = 0, False, False
    for line in doc.split("\n"):
        line_end = pos + len(line)
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            if re.match(r"#{1,6} ", line):
                headings.append((pos, line_end))
            is_table = line.startswith("|")
            if is_table and not prev_table:
                table_headers.append((pos, line_end))
            prev_table = is_table
        pos = line_end + 1
    return headings, table_headers


def span_context(doc: str, is_code: bool, start: int) -> dict:
    headings, table_headers = structure(doc, is_code)
    info = {}
    before = [h for h in headings if h[0] <= start]
    if before:
        info["heading_distance"] = max(0, start - before[-1][1])
    line_start = doc.rfind("\n", 0, start) + 1
    line_end = doc.find("\n", start)
    line = doc[line_start: len(doc) if line_end == -1 else line_end]
    if not is_code and line.startswith("|"):
        header = [t for t in table_headers if t[0] <= line_start][-1]
        info["in_table"] = True
        info["table_header_distance"] = start - header[1]
    return info


def build() -> dict[str, bytes]:
    files = sorted(p.stem for p in DOCS_DIR.glob("*.md"))
    if set(files) != set(DOCS):
        raise BuildError(f"docs/ and DOCS differ: only on disk {sorted(set(files) - set(DOCS))}, "
                         f"only in DOCS {sorted(set(DOCS) - set(files))}")
    texts = {doc_id: read_doc(doc_id) for doc_id in DOCS}
    doc_lines, titles = [], {}
    for doc_id, m in DOCS.items():
        text = texts[doc_id]
        if text.startswith("\ufeff") or "\r" in text or not text.endswith("\n"):
            raise BuildError(f"{doc_id}: BOM, CR or missing final newline")
        first = text.split("\n", 1)[0]
        if m["kind"] == "code":
            title = m["source_path"]
        elif first.startswith("# "):
            title = first[2:].strip()
        else:
            raise BuildError(f"{doc_id}: first line is not a '# ' title")
        titles[doc_id] = title
        doc_lines.append({"doc_id": doc_id, "path": f"docs/{doc_id}.md", "title": title,
                          "n_chars": len(text), "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                          "meta": m})

    out_questions, seen, errors = [], set(), []
    for spec in QUESTIONS:
        qid = spec["id"]
        if qid in seen:
            raise BuildError(f"duplicate question id {qid}")
        seen.add(qid)
        role = spec["role"]
        if role not in ROLES:
            raise BuildError(f"{qid}: role {role!r}")
        try:
            evidence = [locate(texts, qid, item) for item in spec["evidence"]]
        except BuildError as exc:
            errors.append(str(exc))
            continue
        answerable = bool(evidence)
        hop = spec["hop"]
        if hop and len(evidence) < 2:
            raise BuildError(f"{qid}: multi-hop question needs two or more spans")
        mode = "none" if not answerable else ("all" if hop else "any")
        # ACL: every cited document must be readable by the asking role.
        for ev in evidence:
            acl = DOCS[ev["doc_id"]]["acl"]
            if "all" not in acl and role not in acl:
                raise BuildError(f"{qid}: role {role} cannot read {ev['doc_id']} (acl {acl})")
        tags = {"dataset": DATASET, "lang": "zh-Hans" if re.search(r"[\u4e00-\u9fff]", spec["question"]) else "en",
                "multi_hop": hop, "kind": None, "role": role, "topic": spec["topic"]}
        extra = dict(spec["tags"])
        # Structural facts about the gold spans, computed from the documents.
        contexts = [span_context(texts[ev["doc_id"]], DOCS[ev["doc_id"]]["kind"] == "code", ev["start"])
                    for ev in evidence]
        if contexts:
            if any(c.get("in_table") for c in contexts):
                extra["answer_in_table"] = True
                extra["table_header_distance"] = max(c["table_header_distance"] for c in contexts if c.get("in_table"))
            dists = [c["heading_distance"] for c in contexts if "heading_distance" in c]
            if dists:
                extra["heading_distance"] = min(dists)
                if min(dists) >= 700:
                    extra["far_from_heading"] = True
        if hop:
            extra["evidence_docs"] = sorted({ev["doc_id"] for ev in evidence})
        if "trap" in extra and extra["trap"] == "restricted_doc":
            rd = extra["restricted_doc_id"]
            if "all" in DOCS[rd]["acl"] or role in DOCS[rd]["acl"]:
                raise BuildError(f"{qid}: restricted_doc_id {rd} is not restricted for {role}")
        kind = spec["kind"] or KIND_OVERRIDES.get(qid)
        if kind is None:
            hard = (not answerable or hop or "trap" in extra or extra.get("answer_in_table")
                    or extra.get("far_from_heading"))
            kind = "known_error" if hard else "frequent"
        tags["kind"] = kind
        tags.update(extra)
        if answerable:
            passages = []
            for ev in evidence:
                ps, pe = paragraph(texts[ev["doc_id"]], ev["start"], ev["end"])
                p = {"doc_id": ev["doc_id"], "start": ps, "end": pe}
                if p not in passages:
                    passages.append(p)
        else:
            passages = []
            for doc_id, anchor in spec["passage"]:
                loc = locate(texts, qid, (doc_id, anchor))
                passages.append({"doc_id": doc_id, "start": loc["start"], "end": loc["end"]})
            if tags["unanswerable_kind"] not in ("not_in_corpus", "near_miss", "outdated_only"):
                raise BuildError(f"{qid}: unanswerable_kind {tags['unanswerable_kind']!r}")
        answers = spec["answers"]
        if answerable and (not spec["answer"] or spec["answer"] in ("",)):
            raise BuildError(f"{qid}: empty answer")
        if answerable and spec["answer"] not in answers:
            answers = [spec["answer"], *answers]
        out_questions.append({
            "id": qid, "question": spec["question"], "answer": spec["answer"], "answers": answers,
            "answerable": answerable, "evidence": evidence, "evidence_mode": mode,
            "source_passage": passages, "tags": tags})

    out_questions.sort(key=lambda q: q["id"])
    if errors:
        raise BuildError(f"{len(errors)} problem(s):\n" + "\n".join(errors))
    stats = make_stats(doc_lines, texts, out_questions)

    def dump(rows: list) -> bytes:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")

    return {
        "docs.jsonl": dump(doc_lines),
        "questions.jsonl": dump(out_questions),
        "stats.json": (json.dumps(stats, ensure_ascii=False, indent=2) + "\n").encode("utf-8"),
    }


def make_stats(doc_lines, texts, questions) -> dict:
    n_chars = sorted(d["n_chars"] for d in doc_lines)
    q_tags = [q["tags"] for q in questions]
    return {
        "name": "demo",
        "docs": len(doc_lines),
        "docs_by_lang": dict(sorted(Counter(d["meta"]["lang"] for d in doc_lines).items())),
        "docs_by_kind": dict(sorted(Counter(d["meta"]["kind"] for d in doc_lines).items())),
        "docs_restricted": sorted(d["doc_id"] for d in doc_lines if "all" not in d["meta"]["acl"]),
        "doc_chars_total": sum(n_chars),
        "doc_chars_min": n_chars[0],
        "doc_chars_median": n_chars[len(n_chars) // 2],
        "doc_chars_max": n_chars[-1],
        "docs_over_6000_chars": sum(1 for n in n_chars if n >= 6000),
        "doc_bytes_total_utf8": sum(len(t.encode("utf-8")) for t in texts.values()),
        "questions": len(questions),
        "questions_by_lang": dict(sorted(Counter(t["lang"] for t in q_tags).items())),
        "answerable": sum(q["answerable"] for q in questions),
        "unanswerable": sum(not q["answerable"] for q in questions),
        "unanswerable_by_kind": dict(sorted(Counter(t["unanswerable_kind"] for t in q_tags
                                                    if "unanswerable_kind" in t).items())),
        "multi_hop": sum(t["multi_hop"] for t in q_tags),
        "evidence_mode": dict(sorted(Counter(q["evidence_mode"] for q in questions).items())),
        "answer_in_table": sum(bool(t.get("answer_in_table")) for t in q_tags),
        "far_from_heading": sum(bool(t.get("far_from_heading")) for t in q_tags),
        "kind": dict(sorted(Counter(t["kind"] for t in q_tags).items())),
        "role": dict(sorted(Counter(t["role"] for t in q_tags).items())),
        "trap": dict(sorted(Counter(t["trap"] for t in q_tags if "trap" in t).items())),
        "evidence_spans": sum(len(q["evidence"]) for q in questions),
        "evidence_docs_cited": len({e["doc_id"] for q in questions for e in q["evidence"]}),
    }


def main(argv: list[str]) -> int:
    try:
        outputs = build()
    except BuildError as exc:
        print(f"build_demo: {exc}", file=sys.stderr)
        return 1
    if "--check" in argv:
        stale = [name for name, data in outputs.items()
                 if not (ROOT / name).exists() or (ROOT / name).read_bytes() != data]
        if stale:
            print(f"build_demo: out of date: {', '.join(stale)}", file=sys.stderr)
            return 1
        print("build_demo: up to date")
        return 0
    for name, data in outputs.items():
        (ROOT / name).write_bytes(data)
    print(json.loads(outputs["stats.json"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
