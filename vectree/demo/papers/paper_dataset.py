"""Demo paper 5: a dataset paper on 212 cells aged under driving profiles (fictional)."""

from __future__ import annotations

from vectree.demo.model import Figure, Paper, Section, Series, Table

SLUG = "helix212-dataset"

PAPER = Paper(
    slug=SLUG,
    title="HELIX-212: An Open Dataset of 212 Cylindrical Cells Aged under Synthetic Driving Profiles",
    authors=["Rosa Marquez", "Henrik Vahl", "Ngozi Adeyemi", "Luca Benedetti"],
    affiliation="Open Battery Data Consortium, Port Alder Research Campus",
    keywords=["dataset", "cycle ageing", "driving profiles", "benchmark", "early-life prediction"],
    abstract=(
        "Data-driven models of battery ageing are only as good as the data they are trained on, "
        "and most public ageing datasets cycle a few dozen cells with constant currents that "
        "resemble no real application. We present HELIX-212, an open dataset of 212 cylindrical "
        "NMC622/graphite cells aged until end of life under dynamic discharge profiles derived "
        "from recorded vehicle trips. The test matrix combines four driving profiles, three "
        "ambient temperatures and three charging rates, with about six cells per condition, and "
        "the campaign ran for 31 months. Besides the full-resolution time series, the release "
        "contains cycle-level summaries and periodic checkups with capacity, pulse resistance and "
        "low-rate voltage curves, all in a documented columnar format. We describe the "
        "experimental design, the data records and the quality control, validate the data by "
        "reproducing known ageing trends, and define two benchmark tasks, early-life prediction "
        "and partial-charge health estimation, with baseline results. HELIX-212 is released "
        "under a permissive licence to support reproducible research on ageing under realistic "
        "loads."
    ),
    sections=[
        Section(
            "Introduction",
            [
                "Machine learning has become a standard tool for battery lifetime prediction and "
                "health estimation, but progress is measured on a small number of public datasets. "
                "Most of them cycle cells with constant-current discharges, sometimes with fast "
                "charging, at a single temperature. Models trained on such data learn features of "
                "the test protocol as much as features of the cell, and their accuracy under the "
                "variable loads of an electric vehicle is unknown.",
                "Collecting ageing data under realistic loads is expensive. A cell cycled with a "
                "dynamic profile at moderate average current needs one to three years to reach end "
                "of life, and a statistically useful dataset needs many cells per condition because "
                "cell-to-cell variation in lifetime is large. The consortium behind HELIX-212 pooled "
                "the cycler capacity of three laboratories to run a single harmonised campaign.",
                "This paper is a data descriptor. Section 2 compares HELIX-212 with existing "
                "datasets, Section 3 describes the experimental design, Section 4 the data records, "
                "and Section 5 the technical validation and baseline results for two benchmark "
                "tasks. Usage notes follow in Section 6.",
            ],
        ),
        Section(
            "Related Datasets",
            [
                "Table 1 lists public cycle-ageing datasets that are frequently used for model "
                "development, identified by the short names under which they are distributed. "
                "Their cell counts range from 48 to 124, and only one of them includes a dynamic "
                "discharge profile, applied at a single temperature. None combines dynamic "
                "discharge with several temperatures and charging rates, and none publishes the "
                "raw time series at a sampling rate above 1 Hz. HELIX-212 fills this gap: it is "
                "larger than any of them, and every cell follows a trip-derived profile.",
            ],
            tables=[
                Table(
                    "Comparison of HELIX-212 with public cycle-ageing datasets.",
                    ["Dataset", "Cells", "Chemistry", "Discharge", "Temperatures", "Sampling"],
                    [
                        ["TerraCell-48", "48", "LFP", "constant current", "1", "1 Hz"],
                        ["VoltArc-124", "124", "LFP", "constant current", "1", "0.1 Hz"],
                        ["Kestrel-NCA", "64", "NCA", "constant current", "3", "1 Hz"],
                        ["DriveCycle-80", "80", "NMC532", "dynamic", "1", "1 Hz"],
                        ["HELIX-212 (this work)", "212", "NMC622", "dynamic", "3", "10 Hz"],
                    ],
                )
            ],
        ),
        Section(
            "Experimental Design",
            [],
            subsections=[
                Section(
                    "Cells",
                    [
                        "All cells are commercial 18650 cells with an NMC622 cathode and a graphite "
                        "anode, a nominal capacity of 3.0 Ah and a voltage window from 2.5 V to 4.2 V. "
                        "They came from two production lots, 108 cells from lot A and 104 cells from "
                        "lot B, and the lots were distributed evenly over the test conditions so that "
                        "lot effects can be estimated. On arrival, every cell was weighed, its "
                        "open-circuit voltage and 1 kHz impedance recorded, and a capacity test at C/3 "
                        "performed at 25 °C.",
                        "The initial C/3 capacities had a mean of 3.04 Ah with a standard deviation of "
                        "0.012 Ah, and the 1 kHz impedance a mean of 23.1 mΩ. Lot B cells were on average "
                        "0.3% lower in capacity and 2% higher in impedance than lot A cells. No cell was "
                        "rejected at this stage, because the spread of initial properties is itself of "
                        "interest for studies of cell-to-cell variation.",
                    ],
                ),
                Section(
                    "Load Profiles",
                    [
                        "The four discharge profiles were derived from speed traces of real trips "
                        "recorded with a compact electric car: Urban, Suburban, Motorway and "
                        "Aggressive. Each trace was converted to battery power with a longitudinal "
                        "vehicle model and scaled to a single cell of a pack with 96 cells in series "
                        "and 30 in parallel. The resulting profiles have mean discharge rates of 0.6C "
                        "(Urban), 0.9C (Suburban), 1.4C (Motorway) and 2.1C (Aggressive), with "
                        "regenerative braking pulses of up to 1.5C and discharge peaks of up to 5C in "
                        "the Aggressive profile.",
                        "A cycle consists of repeating a profile until the cell reaches 10% state of "
                        "charge by coulomb counting or its voltage falls below 2.5 V, followed by a "
                        "rest of 15 minutes and a constant-current constant-voltage charge to 4.2 V at "
                        "0.5C, 1C or 2C, with a C/20 cut-off current. The three ambient temperatures "
                        "were 15 °C, 25 °C and 35 °C. Four profiles, three charging rates and three "
                        "temperatures give 36 conditions; with six cells per condition, 216 cells "
                        "were started, and four were excluded after early channel faults.",
                    ],
                ),
                Section(
                    "Test Equipment and Checkups",
                    [
                        "The campaign used a 256-channel cycler with a current accuracy of 0.05% of "
                        "full scale and a voltage accuracy of 1 mV, and nine climate chambers with a "
                        "stability of ±0.5 K. Current, voltage and the surface temperature measured by a "
                        "thermocouple at the middle of each can were logged at 10 Hz during cycling.",
                        "Checkups were performed every 100 equivalent full cycles, at 25 °C regardless "
                        "of the cycling temperature. A checkup comprises a C/3 capacity test, hybrid "
                        "pulse power characterisation with 10 s pulses at ten state-of-charge levels, "
                        "and a C/20 charge and discharge for incremental capacity analysis. Cycling "
                        "ended when the C/3 capacity fell below 70% of the initial value or after "
                        "2,000 equivalent full cycles, whichever came first.",
                    ],
                ),
            ],
        ),
        Section(
            "Data Records",
            [],
            subsections=[
                Section(
                    "File Format",
                    [
                        "The release is organised by cell. For each cell there are three Parquet "
                        "files: the full time series with one row per sample, a cycle summary with one "
                        "row per cycle (charge and discharge capacity and energy, mean and maximum "
                        "temperature, and coulombic efficiency), and a checkup table with one row per "
                        "checkup. A JSON file per cell records the lot, test condition, channel and "
                        "chamber, together with every incident noted during the test. A single "
                        "catalogue table lists all cells with their conditions and end-of-life "
                        "cycle counts.",
                        "The raw time series amount to 418 GB. Because many users need only the "
                        "cycle-level data, we also provide the time series downsampled to 1 Hz, which "
                        "occupies 37 GB, and the summaries and checkups alone, which fit into 410 MB. "
                        "All files are released under the Creative Commons Attribution 4.0 licence, "
                        "and a small Python package reads them into data frames with documented "
                        "column names and units.",
                    ],
                ),
                Section(
                    "Quality Control",
                    [
                        "Every time series was screened automatically for gaps, out-of-range values and "
                        "inconsistencies between the logged current and the capacity counters of the "
                        "cycler. Gaps longer than 5 s affected 0.37% of all samples and are marked, not "
                        "interpolated. In eleven cells the chamber temperature left its tolerance band "
                        "for more than one hour, in all cases due to chamber maintenance; the affected "
                        "periods are flagged in the cell metadata.",
                        "The coulombic efficiency computed from the cycler data was compared with the "
                        "capacity change between consecutive checkups. For 207 of the 212 cells the two "
                        "agree within 0.5% of the initial capacity over the whole life; the five "
                        "remaining cells had current-sensor offsets that were corrected and documented.",
                    ],
                ),
            ],
        ),
        Section(
            "Technical Validation",
            [],
            subsections=[
                Section(
                    "Ageing Overview",
                    [
                        "The lifetimes in HELIX-212 reproduce well-known trends (Figure 1). At 25 °C and "
                        "1C charging, the mean number of equivalent full cycles until the capacity "
                        "fell below 70% was 1,760 for the Urban profile, 1,540 for Suburban, 1,180 for "
                        "Motorway and 820 for Aggressive. Charging at 2C shortened the life by 18% to "
                        "27% depending on the profile, and cycling at 15 °C was more harmful than at "
                        "35 °C for the 2C charging groups, a sign of lithium plating.",
                        "A knee, an abrupt acceleration of capacity fade, was found in 61% of the cells "
                        "using a two-segment linear fit, at a median state of health of 86%. Cells from "
                        "lot B reached end of life on average 4% earlier than cells from lot A under "
                        "identical conditions, a difference small compared with the effect of the "
                        "load profile but statistically significant.",
                    ],
                    figures=[
                        Figure(
                            "Mean equivalent full cycles to end of life (70% capacity) for each driving "
                            "profile at three ambient temperatures, 1C charging.",
                            kind="bar",
                            series=[
                                Series("15 °C", ["Urban", "Suburban", "Motorway", "Aggressive"], [1690, 1470, 1110, 760]),
                                Series("25 °C", ["Urban", "Suburban", "Motorway", "Aggressive"], [1760, 1540, 1180, 820]),
                                Series("35 °C", ["Urban", "Suburban", "Motorway", "Aggressive"], [1420, 1260, 990, 700]),
                            ],
                            ylabel="Equivalent full cycles",
                            width=0.7,
                            aspect=0.52,
                        )
                    ],
                ),
                Section(
                    "Benchmark Tasks",
                    [
                        "We define two benchmark tasks with fixed training and test splits, stratified "
                        "by condition: 148 cells for training and 64 for testing. The first task is "
                        "early-life prediction: from the data of the first 100 equivalent full cycles, "
                        "predict the number of cycles until the capacity falls below 80%. An elastic net "
                        "on summary statistics of the discharge capacity difference between the first "
                        "and the hundredth cycle reached a mean absolute percentage error of 11.4%, and "
                        "gradient-boosted trees on the same features reached 9.7%.",
                        "The second task is health estimation from partial charging: estimate the "
                        "present capacity from the voltage, current and temperature recorded while "
                        "charging from 3.7 V to 4.0 V, a window that most vehicles pass through on "
                        "every charge. A one-dimensional convolutional network trained on 1 Hz data "
                        "reached a root-mean-square error of 1.05% of nominal capacity on the test "
                        "cells. Both baselines are provided as scripts in the release so that new "
                        "methods can be compared on identical splits.",
                    ],
                ),
                Section(
                    "Degradation Modes from Incremental Capacity",
                    [
                        "The C/20 curves recorded at every checkup allow the degradation modes to be "
                        "followed over life. In incremental capacity curves, the peak associated with "
                        "the graphite stage-2 to stage-1 transition near 3.9 V decreased steadily for "
                        "all profiles, which indicates loss of lithium inventory as the dominant mode "
                        "before the knee. After the knee, the cathode peak near 3.6 V also shrank "
                        "rapidly in the cells charged at 2C, consistent with loss of active material.",
                        "For the Aggressive profile at 35 °C, the peak positions shifted by up to 45 mV "
                        "towards higher voltage during charging, reflecting the growth of the cell "
                        "resistance. These trends agree with the degradation patterns reported for "
                        "constant-current ageing of similar cells, which gives confidence that the "
                        "checkup data are consistent across laboratories and channels.",
                    ],
                ),
            ],
        ),
        Section(
            "Usage Notes",
            [
                "Users should note that equivalent full cycles are computed from the discharge "
                "throughput relative to the nominal capacity, not the current capacity, so an aged "
                "cell accumulates equivalent cycles more slowly per profile repetition. The "
                "checkup temperature of 25 °C differs from the cycling temperature for two thirds of "
                "the cells; capacity values from cycling data and from checkups should therefore "
                "not be mixed without temperature correction.",
                "Cells of the same condition were cycled on channels of different cycler racks, "
                "which is documented in the metadata and can be used to check for equipment effects. "
                "We ask users to cite this descriptor and to report results on the official splits. "
                "Errata and future additions, such as post-mortem images of selected cells, will "
                "be published as new versions of the release with unchanged cell identifiers.",
            ],
        ),
    ],
    references=[
        "K. Lindahl, M. Oduya and P. Fernandes. TerraCell-48: constant-current ageing of LFP cells. "
        "Scientific Battery Data, 1:1–9, 2019.",
        "J. Park, T. Whitfield and R. Das. VoltArc-124: a large LFP fast-charging dataset. Scientific Battery "
        "Data, 2:11–22, 2020.",
        "A. Moreau and H. Schultz. Kestrel-NCA: temperature-dependent cycling of NCA cells. Journal of Cell "
        "Durability, 15(2):140–152, 2022.",
        "S. Tanaka, B. Olsen and C. Murphy. DriveCycle-80: dynamic-load ageing of NMC532 cells. Scientific "
        "Battery Data, 3:30–41, 2021.",
        "L. Ahmed and G. Rossi. Early prediction of cycle life from discharge capacity curves. Machine "
        "Learning for Energy Systems, 1:20–34, 2019.",
        "E. Kowalski. Knee-point identification in capacity fade trajectories. Battery Diagnostics Review, "
        "8(1):1–13, 2022.",
        "F. Nguyen and D. Hartmann. Longitudinal vehicle models for battery load generation. Transport "
        "Electrification Reports, 2:66–79, 2020.",
        "M. Silva, I. Ivanova and T. Brooks. Columnar storage formats for large battery test data. "
        "Proceedings of the Workshop on Energy Data Infrastructure, pages 8–15, 2023.",
    ],
)

QUESTIONS = [
    {
        "question": "How large are the raw time series of the HELIX-212 dataset?",
        "answer": "418 GB",
        "heading": "4.1 File Format",
    },
    {
        "question": "What mean absolute percentage error did the elastic net baseline reach on the HELIX-212 early-life prediction task?",
        "answer": "11.4%",
        "heading": "5.2 Benchmark Tasks",
    },
    {
        "question": "How often were checkups performed during the HELIX-212 ageing campaign?",
        "answer": "every 100 equivalent full cycles",
        "heading": "3.3 Test Equipment and Checkups",
    },
]
