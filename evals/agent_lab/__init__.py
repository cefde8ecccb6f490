"""The offline research agent's quality eval, run by ``pressroom eval agent``.

Where ``evals.context_lab`` measures what the assembler hands a model, this measures what
the offline agent (``activities.providers.research_agent``) makes of it: real jobs over
corpora no one here wrote (``examples/build_fixtures.py``: this Python's asyncio and the
installed argon2-cffi), each question with the key lines an answer must cite. One module
per role, as in the context lab: ``dataset`` (the questions), ``runner`` (the jobs, through
a real Temporal dev server and worker), ``graders`` (what an article cites), ``gate`` (the
release thresholds), ``command`` (the CLI's table and ``--json``). See README.md.
"""
