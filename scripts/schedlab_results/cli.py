"""What scripts/plot and scripts/compare share: user errors as one line and exit status 2."""
import sys

from .load import UserError

EXIT_USER_ERROR = 2
# scripts/compare: the comparison judged no case (every case short of blocks or repetitions, or
# flagged): it must never pass a CI gate as "no regression".
EXIT_NOTHING_JUDGED = 3


def run(prog, main):
    """Runs main(); a UserError becomes `PROG: error: FILE: problem; fix` on stderr, no
    traceback (tracebacks are left for bugs in these scripts)."""
    try:
        main()
    except UserError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)
    except KeyboardInterrupt:
        sys.exit(130)
