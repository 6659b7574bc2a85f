"""The researcher pages a lab cleans a MultiNLI-size collection with (workers, bonuses, imports,
each adjudication queue and a study's page), cold and warm against the login page, on
bench/crowd_pages.py's corpus and crowd: that benchmark with these pages chosen.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_crowd_bench .venv/bin/python bench/researcher_pages.py \\
        [--pairs 433000] [--repeat 3] [--stale] [--fresh-too] [--keep] [--only workers,imports]

--stale leaves the build's statistics as the bulk load left them (no ANALYZE), --fresh-too measures
once more after ANALYZE; any other option is crowd_pages.py's.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import crowd_pages

RESEARCHER_PAGES = "adjudication,workers,bonuses,imports,study page,approval"

if __name__ == "__main__":
    if not any(arg == "--only" or arg.startswith("--only=") for arg in sys.argv[1:]):
        sys.argv += ["--only", RESEARCHER_PAGES]
    crowd_pages.main()
