"""Every figure of the report, drawn in one call (draw_all), which scripts/plot makes: the
numbered figures (figures.py) and the claims' forest plots (forest.py), both drawn with the
conventions of drawing.py by one Painter, so that a variant has one colour across them."""
from . import figures, forest
from .drawing import Painter


def draw_all(results, out_dir, claims_table):
    """The Figures sections, and the claims' forest plots (forest.ClaimFigures), which the
    report places in its Claims section."""
    painter = Painter(results, out_dir)
    return (figures.draw(painter),
            forest.ClaimFigures(forest.figure_claims(painter, claims_table),
                                forest.figure_claims_by_configuration(painter, claims_table)))
