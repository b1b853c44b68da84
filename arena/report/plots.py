"""The report's figures: frames from :mod:`arena.report.stats` in, matplotlib Figures out.

Figures are built with ``matplotlib.figure.Figure`` (the Agg canvas, no pyplot and no
global state), so this works headless and in threads; the caller saves them. Each bot
keeps its colour in every figure (:func:`bot_colors`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import AbstractContextManager

import matplotlib
import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

ENDING_COLORS = {
    "normal": "#8fbc8f",
    "opponent failed": "#ced4da",
    "timeout": "#f08c00",
    "crash": "#e03131",
    "illegal move": "#9c36b5",
    "protocol error": "#8d5524",
    "start failure": "#862e9c",
    "interrupted": "#495057",
}
FIRST_COLOR = "#1c7ed6"
SECOND_COLOR = "#ced4da"


def bot_colors(names: Sequence[str]) -> dict[str, str]:
    """A distinct colour per bot, stable for a given order of names (tab10, then tab20, then
    evenly spaced hues)."""
    count = len(names)
    if count <= 10:
        colors = [to_hex(c) for c in colormaps["tab10"].colors[:count]]  # type: ignore[attr-defined]
    elif count <= 20:
        cmap = colormaps["tab20"].colors  # type: ignore[attr-defined]
        colors = [to_hex(cmap[i]) for i in list(range(0, 20, 2)) + list(range(1, 20, 2))][:count]
    else:
        colors = [to_hex(colormaps["hsv"](i / count)) for i in range(count)]
    return dict(zip(names, colors, strict=True))


def plain_text() -> AbstractContextManager[object]:
    """Draw text as given: no mathtext, so a label holding ``$`` (a bot's name, say) is
    shown as it is instead of being parsed (a parse error would stop the whole report).
    Create and save the figures inside it (tick labels are made when drawn)."""
    return matplotlib.rc_context({"text.parse_math": False})


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    return fig


def _rows_height(rows: int, per_row: float = 0.42, base: float = 1.6, least: float = 2.6) -> float:
    return max(least, base + per_row * rows)


def _style(ax, grid_axis: str = "x") -> None:  # type: ignore[no-untyped-def]
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis=grid_axis, color="#e9ecef", linewidth=0.8)
    ax.set_axisbelow(True)


# ------------------------------------------------------------------ ratings
def elo_plot(table: pd.DataFrame, colors: dict[str, str]) -> Figure:
    """Bradley-Terry ratings with their 95% intervals, best at the top."""
    fig = _figure(8, _rows_height(len(table)))
    ax = fig.subplots()
    y = np.arange(len(table))[::-1]
    for yi, row in zip(y, table.itertuples(index=False), strict=True):
        color = colors.get(row.name, "#495057")
        ax.errorbar(row.elo, yi, xerr=[[row.elo - row.elo_low], [row.elo_high - row.elo]], fmt="o",
                    color=color, ecolor=color, elinewidth=2.2, capsize=5, markersize=8)
        ax.annotate(f"{row.elo:+.0f}  [{row.elo_low:+.0f}, {row.elo_high:+.0f}]", (row.elo_high, yi),
                    xytext=(8, 0), textcoords="offset points", va="center", fontsize=8.5, color="#495057")
    ax.axvline(0, color="#868e96", linestyle="--", linewidth=1)
    ax.set_yticks(y, table["name"])
    low, high = float(table["elo_low"].min()), float(table["elo_high"].max())
    span = max(high - low, 50)
    ax.set_xlim(low - 0.08 * span, high + 0.45 * span)
    ax.set_xlabel("Elo (0 = the average bot)")
    ax.set_title("Bradley-Terry ratings from all games, with 95% intervals")
    _style(ax)
    return fig


# ------------------------------------------------------------------ head to head
def head_to_head_plot(wins: pd.DataFrame, games: pd.DataFrame) -> Figure:
    """Heatmap of the row bot's win rate against the column bot, each cell labelled W-L."""
    names = list(wins.index)
    n = len(names)
    side = max(4.2, 1.0 + 0.75 * n)
    fig = _figure(side + 1.6, side)
    ax = fig.subplots()
    rate = (wins / games).to_numpy(dtype=float)
    masked = np.ma.masked_invalid(rate)
    cmap = colormaps["RdBu"].with_extremes(bad="#f1f3f5")
    image = ax.imshow(masked, cmap=cmap, vmin=0, vmax=1)
    for i in range(n):
        for j in range(n):
            if i == j or math.isnan(rate[i, j]):
                text, color = ("—" if i == j else "", "#adb5bd")
            else:
                w, g = int(wins.iloc[i, j]), int(games.iloc[i, j])
                text = f"{w}–{g - w}\n{rate[i, j]:.0%}"
                color = "white" if abs(rate[i, j] - 0.5) > 0.3 else "#212529"
            ax.text(j, i, text, ha="center", va="center", fontsize=8.5 if n <= 8 else 7, color=color)
    ax.set_xticks(range(n), names, rotation=35, ha="right")
    ax.set_yticks(range(n), names)
    ax.set_xlabel("opponent")
    ax.set_ylabel("bot")
    ax.set_title("Head to head: wins–losses of the row bot")
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    bar = fig.colorbar(image, ax=ax, shrink=0.8)
    bar.set_label("win rate of the row bot")
    bar.ax.yaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    return fig


def margins_plot(margins: pd.DataFrame, colors: dict[str, str]) -> Figure:
    """Score margins per pairing (games ended by the rules): box plots with every game as a
    dot, filled when the first-named bot moved first."""
    pairings = list(dict.fromkeys(margins["pairing"]))
    fig = _figure(8.5, _rows_height(len(pairings), 0.5))
    ax = fig.subplots()
    y = np.arange(len(pairings))[::-1]
    data = [margins.loc[margins["pairing"] == p, "margin"].to_numpy(float) for p in pairings]
    ax.boxplot(data, positions=y, orientation="horizontal", widths=0.55, showfliers=False,
               patch_artist=True, boxprops={"facecolor": "#f1f3f5", "edgecolor": "#868e96"},
               medianprops={"color": "#212529", "linewidth": 1.6}, whiskerprops={"color": "#868e96"},
               capprops={"color": "#868e96"})
    rng = np.random.default_rng(0)
    for yi, pairing in zip(y, pairings, strict=True):
        rows = margins[margins["pairing"] == pairing]
        color = colors.get(rows["a"].iloc[0], "#495057")
        jitter = rng.uniform(-0.16, 0.16, len(rows))
        first = rows["a_first"].to_numpy(bool)
        ax.scatter(rows["margin"][first], yi + jitter[first], s=26, color=color, edgecolor="white",
                   linewidth=0.6, zorder=3)
        ax.scatter(rows["margin"][~first], yi + jitter[~first], s=26, facecolor="white", edgecolor=color,
                   linewidth=1.3, zorder=3)
    ax.axvline(0, color="#868e96", linestyle="--", linewidth=1)
    ax.set_yticks(y, pairings)
    ax.set_xlabel("score margin: first-named bot minus second (games ended by the rules)")
    ax.set_title("Score margins per pairing")
    handles = [ax.scatter([], [], s=26, color="#495057", label="first-named bot moved first"),
               ax.scatter([], [], s=26, facecolor="white", edgecolor="#495057", linewidth=1.3,
                          label="second-named bot moved first")]
    fig.legend(handles=handles, loc="outside lower center", fontsize=8, frameon=False, ncols=2)
    _style(ax)
    return fig


# ------------------------------------------------------------------ seat advantage
def seat_plot(seat: pd.DataFrame) -> Figure:
    """Win rate as first and as second player, per bot, with the overall first-player rate."""
    overall = seat.iloc[0]
    bots = seat.iloc[1:]
    bots = bots[bots["games"] > 0]
    fig = _figure(max(6.0, 1.8 + 1.0 * len(bots)), 4.2)
    ax = fig.subplots()
    x = np.arange(len(bots))
    width = 0.38
    first_err = np.array([bots["first_win_rate"] - bots["first_low"],
                          bots["first_high"] - bots["first_win_rate"]])
    ax.bar(x - width / 2, bots["first_win_rate"], width, color=FIRST_COLOR, label="moving first",
           yerr=np.nan_to_num(first_err), capsize=3, error_kw={"elinewidth": 1, "ecolor": "#495057"})
    ax.bar(x + width / 2, bots["second_win_rate"], width, color=SECOND_COLOR, edgecolor="#868e96",
           label="moving second")
    for xi, row in zip(x, bots.itertuples(index=False), strict=True):
        ax.text(xi - width / 2, 0.01, f"{row.first_wins}/{row.first_games}", ha="center", va="bottom",
                fontsize=7.5, color="white")
        ax.text(xi + width / 2, 0.01, f"{row.second_wins}/{row.second_games}", ha="center", va="bottom",
                fontsize=7.5, color="#212529")
    if overall["games"]:
        ax.axhline(overall["first_win_rate"], color=FIRST_COLOR, linestyle="--", linewidth=1.2,
                   label=f"first player overall: {overall['first_win_rate']:.0%}")
    ax.axhline(0.5, color="#868e96", linestyle=":", linewidth=1)
    ax.set_xticks(x, bots["name"], rotation=20 if len(bots) > 5 else 0)
    ax.set_ylim(0, 1.08)
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:.0%}")
    ax.set_ylabel("win rate (games ended by the rules)")
    ax.set_title(f"Seat advantage: the first player won {overall['first_wins']} of {overall['games']} games")
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _style(ax, "y")
    return fig


# ------------------------------------------------------------------ endings
def endings_plot(endings: pd.DataFrame) -> Figure:
    """Stacked bars per bot: games ended by the rules, won by the opponent's failure, and
    lost by each kind of own failure."""
    categories = ["normal", "opponent failed"] + [c for c in endings.columns
                                                  if c in ENDING_COLORS and c not in ("normal",)]
    fig = _figure(8.5, _rows_height(len(endings)))
    ax = fig.subplots()
    y = np.arange(len(endings))[::-1]
    left = np.zeros(len(endings))
    for category in categories:
        column = "opponent_failed" if category == "opponent failed" else category
        values = endings[column].to_numpy(float)
        if category not in ("normal", "opponent failed") and not values.any():
            continue
        ax.barh(y, values, left=left, color=ENDING_COLORS[category], label=category, height=0.62,
                edgecolor="white", linewidth=0.8)
        for yi, lo, v in zip(y, left, values, strict=True):
            if v >= max(1, 0.06 * endings["games"].max()):
                ax.text(lo + v / 2, yi, f"{v:.0f}", ha="center", va="center", fontsize=8,
                        color="#212529" if category in ("normal", "opponent failed") else "white")
        left += values
    ax.set_yticks(y, endings["name"])
    ax.set_xlabel("games")
    ax.set_title("How each bot's games ended (failures are the bot's own)")
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _style(ax)
    return fig


# ------------------------------------------------------------------ think time
def think_time_plot(moves: pd.DataFrame, names: Sequence[str], colors: dict[str, str],
                    per_move_ms: float | None = None) -> Figure:
    """The distribution of each bot's time per move (log scale): box (quartiles), whiskers
    (5th-95th percentile), slower moves as dots, the mean as a diamond."""
    present = [n for n in names if (moves["name"] == n).any()]
    fig = _figure(8.5, _rows_height(len(present)))
    ax = fig.subplots()
    y = np.arange(len(present))[::-1]
    data = [np.clip(moves.loc[moves["name"] == n, "time_ms"].dropna().to_numpy(float), 1e-3, None)
            for n in present]
    boxes = ax.boxplot(data, positions=y, orientation="horizontal", widths=0.55, whis=(5, 95),
                       patch_artist=True, flierprops={"marker": "o", "markersize": 2.5, "alpha": 0.5,
                                                      "markeredgecolor": "none"},
                       medianprops={"color": "#212529", "linewidth": 1.4})
    for box, flier, name in zip(boxes["boxes"], boxes["fliers"], present, strict=True):
        box.set_facecolor(colors.get(name, "#adb5bd"))
        box.set_alpha(0.75)
        flier.set_markerfacecolor(colors.get(name, "#adb5bd"))
    for yi, values in zip(y, data, strict=True):
        if len(values):
            ax.scatter([values.mean()], [yi], marker="D", s=22, color="white", edgecolor="#212529", zorder=4)
    if per_move_ms:
        ax.axvline(per_move_ms, color="#c92a2a", linestyle="--", linewidth=1.2,
                   label=f"per-move limit ({per_move_ms:g} ms)")
    ax.scatter([], [], marker="D", s=22, color="white", edgecolor="#212529", label="mean")
    fig.legend(loc="outside lower center", fontsize=8, frameon=False, ncols=2)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:g}")
    ax.set_yticks(y, present)
    ax.set_xlabel("time per move (ms, log scale)")
    ax.set_title("Think time per move")
    _style(ax)
    return fig


def bank_plot(per_game: pd.DataFrame, names: Sequence[str], colors: dict[str, str], bank_ms: float) -> Figure:
    """Time drawn from the bank in each game, per bot, against the size of the bank."""
    present = [n for n in names if (per_game["name"] == n).any()]
    fig = _figure(8.5, _rows_height(len(present)))
    ax = fig.subplots()
    y = np.arange(len(present))[::-1]
    rng = np.random.default_rng(1)
    for yi, name in zip(y, present, strict=True):
        values = per_game.loc[per_game["name"] == name, "bank_ms"].to_numpy(float)
        used = values[values > 0]
        ax.scatter(used, yi + rng.uniform(-0.15, 0.15, len(used)), s=30, color=colors.get(name, "#495057"),
                   edgecolor="white", linewidth=0.5, zorder=3)
        ax.text(1.01, yi, f"{len(used)} of {len(values)} games", transform=ax.get_yaxis_transform(),
                va="center", fontsize=8, color="#495057")
    ax.axvline(bank_ms, color="#c92a2a", linestyle="--", linewidth=1.2,
               label=f"the whole bank ({bank_ms:g} ms)")
    ax.set_xlim(0, bank_ms * 1.05)
    ax.set_ylim(-0.6, len(present) - 0.4)
    ax.set_yticks(y, present)
    ax.set_xlabel("time drawn from the bank in one game (ms)")
    ax.set_title("Time-bank use (one dot per game that drew on the bank)")
    fig.legend(loc="outside lower center", fontsize=8, frameon=False)
    _style(ax)
    return fig


# ------------------------------------------------------------------ scores and lengths
def scores_plot(sides: pd.DataFrame, names: Sequence[str], colors: dict[str, str]) -> Figure:
    """Final scores per bot (games ended by the rules): box plot plus one dot per game."""
    normal = sides[sides["normal"]]
    present = [n for n in names if (normal["name"] == n).any()]
    fig = _figure(8.5, _rows_height(len(present)))
    ax = fig.subplots()
    y = np.arange(len(present))[::-1]
    data = [normal.loc[normal["name"] == n, "score"].to_numpy(float) for n in present]
    ax.boxplot(data, positions=y, orientation="horizontal", widths=0.55, showfliers=False, patch_artist=True,
               boxprops={"facecolor": "#f8f9fa", "edgecolor": "#868e96"},
               medianprops={"color": "#212529", "linewidth": 1.5})
    rng = np.random.default_rng(2)
    for yi, name, values in zip(y, present, data, strict=True):
        ax.scatter(values, yi + rng.uniform(-0.17, 0.17, len(values)), s=18,
                   color=colors.get(name, "#495057"), alpha=0.8, edgecolor="white", linewidth=0.4, zorder=3)
    ax.axvline(0, color="#868e96", linestyle=":", linewidth=1)
    ax.set_yticks(y, present)
    ax.set_xlabel("final score (buttons + bonus − 2 per empty square)")
    ax.set_title("Final scores per bot (games ended by the rules)")
    _style(ax)
    return fig


def lengths_plot(lengths: pd.DataFrame) -> Figure:
    """Histograms of moves per game and of game duration, normal and abnormal endings stacked."""
    fig = _figure(9, 3.6)
    left, right = fig.subplots(1, 2)
    normal = lengths[lengths["normal"].astype(bool)]
    other = lengths[~lengths["normal"].astype(bool)]
    labels = ["ended by the rules", "ended abnormally"]
    colors = [ENDING_COLORS["normal"], ENDING_COLORS["crash"]]
    top = max(1, int(lengths["moves"].max()))
    bins = np.arange(0, top + 3, max(1, math.ceil((top + 2) / 30)))
    left.hist([normal["moves"], other["moves"]], bins=bins, stacked=True, color=colors, label=labels,
              edgecolor="white", linewidth=0.5)
    left.set_xlabel("moves per game (special placements included)")
    left.set_ylabel("games")
    left.set_title("Game length")
    right.hist([normal["duration_s"], other["duration_s"]], bins=20, stacked=True, color=colors, label=labels,
               edgecolor="white", linewidth=0.5)
    right.set_xlabel("wall-clock duration (s)")
    right.set_ylabel("games")
    right.set_title("Game duration")
    right.legend(fontsize=8, frameon=False)
    for ax in (left, right):
        _style(ax, "y")
    return fig


# ------------------------------------------------------------------ rating progression
def progression_plot(progression: pd.DataFrame, names: Sequence[str], colors: dict[str, str]) -> Figure:
    """TrueSkill mu (line) and mu +- sigma (band) of every bot against the games it played."""
    fig = _figure(9, 4.8)
    ax = fig.subplots()
    band = 0.16 if len(names) <= 4 else 0.08  # many overlapping bands turn to mud
    for name in names:
        rows = progression[progression["name"] == name].sort_values("played")
        if rows.empty:
            continue
        color = colors.get(name, "#495057")
        ax.fill_between(rows["played"], rows["mu"] - rows["sigma"], rows["mu"] + rows["sigma"], color=color,
                        alpha=band, linewidth=0)
        ax.plot(rows["played"], rows["mu"], color=color, linewidth=2, label=name)
    ax.set_xlabel("games played by the bot")
    ax.set_ylabel("TrueSkill μ (band: μ ± σ)")
    ax.set_title("Rating progression")
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _style(ax, "both")
    return fig


__all__ = ["ENDING_COLORS", "bank_plot", "bot_colors", "elo_plot", "endings_plot", "head_to_head_plot",
           "lengths_plot", "margins_plot", "progression_plot", "scores_plot", "seat_plot", "think_time_plot"]
