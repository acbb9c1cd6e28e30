"""Demo paper 4: impedance-based state-of-health estimation with DRT features (fictional)."""

from __future__ import annotations

import math

from vectree.demo.model import Figure, Paper, Section, Series, Table

SLUG = "impedance-drt-soh"


def _drt(peaks: list[tuple[float, float, float]]) -> tuple[list[float], list[float]]:
    """A synthetic DRT: sum of Gaussians in log10(tau); peaks are (log10 tau, height, width)."""
    xs = [10 ** (-5 + 0.05 * i) for i in range(141)]
    ys = []
    for x in xs:
        lx = math.log10(x)
        ys.append(round(sum(h * math.exp(-((lx - c) ** 2) / (2 * w * w)) for c, h, w in peaks), 3))
    return xs, ys


_FRESH = _drt([(-3.9, 2.1, 0.25), (-2.1, 4.0, 0.30), (-0.7, 6.2, 0.35), (1.2, 3.0, 0.45)])
_MID = _drt([(-3.9, 2.6, 0.25), (-2.0, 5.1, 0.30), (-0.6, 9.4, 0.35), (1.25, 3.6, 0.45)])
_AGED = _drt([(-3.85, 3.2, 0.26), (-1.9, 6.3, 0.31), (-0.5, 14.8, 0.36), (1.3, 4.4, 0.45)])

PAPER = Paper(
    slug=SLUG,
    title=(
        "State-of-Health Estimation from Electrochemical Impedance Spectra Using "
        "Distribution of Relaxation Times Features and Gaussian Process Regression"
    ),
    authors=["Camille Roussel", "Wei Zhang", "Kofi Mensah"],
    affiliation="Laboratory of Applied Energetics, University of Valmont",
    keywords=["electrochemical impedance spectroscopy", "distribution of relaxation times", "state of health", "Gaussian process"],
    abstract=(
        "Electrochemical impedance spectroscopy (EIS) probes the processes that slow down as a "
        "lithium-ion cell ages, but turning a spectrum into a state-of-health (SoH) estimate "
        "usually requires fitting an equivalent circuit whose topology must be chosen in "
        "advance. We instead deconvolve each spectrum into a distribution of relaxation times "
        "(DRT), which separates overlapping processes by their time constants without a circuit "
        "model, and use the areas and positions of the DRT peaks as features for a Gaussian "
        "process regressor with automatic relevance determination. On 48 blended-cathode 18650 "
        "cells cycled to below 75% SoH, with spectra recorded every 50 cycles, the DRT features "
        "estimate SoH on unseen cells with about half the error of equivalent-circuit features. "
        "The regressor also reports a calibrated uncertainty. The most informative feature is "
        "the resistance of the cathode charge-transfer peak. Because impedance depends strongly "
        "on temperature, we add an Arrhenius normalisation based on the ohmic resistance, "
        "which keeps the error low for spectra measured 10 K away from the training "
        "temperature."
    ),
    sections=[
        Section(
            "Introduction",
            [
                "The state of health of a battery, defined here as the present discharge capacity "
                "divided by the rated capacity, is needed for warranty decisions, for second-life "
                "grading and for the range prediction of electric vehicles. A full capacity test "
                "takes hours and interrupts operation. Impedance measurements, in contrast, take "
                "minutes, can be made at a single state of charge and are increasingly supported by "
                "battery management hardware that injects small sinusoidal currents.",
                "Impedance spectra change systematically with ageing: the ohmic resistance rises as "
                "electrolyte is consumed, the semicircles of interphase and charge-transfer processes "
                "grow as surface films thicken and active area is lost, and the low-frequency "
                "diffusion branch shifts. Extracting these changes robustly is the difficulty. "
                "Equivalent circuit models compress a spectrum into a handful of parameters, but "
                "different circuit topologies fit the same spectrum equally well, and fits can jump "
                "between local optima as the spectrum evolves.",
                "The distribution of relaxation times offers a model-free alternative. It "
                "represents the polarisation part of the impedance as a continuous distribution "
                "over time constants, in which each physical process appears as a peak. We use DRT "
                "peak features as inputs to a probabilistic regressor and show on an ageing campaign "
                "of 48 cells that this combination is more accurate and more robust than circuit "
                "parameters, raw impedance values or a small neural network.",
            ],
        ),
        Section(
            "Related Work",
            [
                "Impedance-based health estimation has been approached in three ways. The first "
                "fits equivalent circuits, typically a series resistance with two or three "
                "resistor-constant-phase-element pairs and a Warburg element, and regresses SoH on "
                "the fitted resistances. The second uses the impedance at a few selected frequencies "
                "directly, which avoids fitting but ties the method to a particular cell type. The "
                "third trains neural networks on whole spectra; these need many cells to generalise "
                "and give no uncertainty estimate.",
                "DRT analysis has been used mainly for diagnosis, to attribute impedance growth to "
                "electrodes and processes, and less often as a feature extractor for regression. "
                "Earlier studies that did so used peak heights, which depend on the regularisation "
                "strength, rather than peak areas, which are invariant to it to first order. Our "
                "work uses areas and log time constants and adds explicit temperature "
                "normalisation.",
            ],
        ),
        Section(
            "Methodology",
            [],
            subsections=[
                Section(
                    "Impedance Measurement",
                    [
                        "Spectra were measured galvanostatically from 10 kHz to 10 mHz with 10 "
                        "frequencies per decade and a current amplitude of 50 mA, after adjusting the "
                        "cell to 50% state of charge and letting it rest for two hours at 25 °C. A "
                        "measurement took 21 minutes, dominated by the lowest frequencies. Each "
                        "spectrum was checked with a linear Kramers-Kronig test, and spectra whose "
                        "relative residuals exceeded 1% at any frequency were rejected; this removed "
                        "43 spectra, mostly recorded shortly after temperature disturbances.",
                    ],
                ),
                Section(
                    "Distribution of Relaxation Times",
                    [
                        "The impedance is modelled as Z(f) = R_0 + ∫ γ(ln τ) / (1 + i2πfτ) d ln τ, "
                        "where R_0 is the ohmic resistance and γ the DRT. We discretise γ on 120 time "
                        "constants spaced logarithmically between 1 µs and 1,000 s using piecewise "
                        "linear basis functions, and solve the resulting linear least-squares problem "
                        "with Tikhonov regularisation on the second derivative of γ and a "
                        "non-negativity constraint. The regularisation parameter was chosen by "
                        "generalised cross-validation on a subset of 30 spectra and then fixed at "
                        "λ = 10^−3 for all spectra, so that features remain comparable over ageing.",
                    ],
                ),
                Section(
                    "Feature Extraction",
                    [
                        "In all spectra of this cell type the DRT shows four peaks (Figure 1). By "
                        "comparison with symmetric-cell measurements we attribute peak P1 near 0.1 ms "
                        "to contact and interphase resistance, P2 near 8 ms to charge transfer at the "
                        "graphite anode, P3 near 0.2 s to charge transfer at the blended cathode, and "
                        "P4 above 5 s to solid-state diffusion. Peaks are separated at the minima of "
                        "γ between them, and for each peak we compute its area, which is a "
                        "resistance, and the logarithm of its centroid time constant.",
                        "The feature vector therefore has nine entries: the ohmic resistance R_0, the "
                        "four peak resistances R_1 to R_4 and the four log time constants. All "
                        "features are standardised with the mean and standard deviation of the "
                        "training cells.",
                    ],
                ),
                Section(
                    "Gaussian Process Regression",
                    [
                        "SoH is regressed on the features with a Gaussian process using a squared "
                        "exponential kernel with one length scale per feature (automatic relevance "
                        "determination) plus a white-noise term. The hyperparameters are fitted by "
                        "maximising the marginal likelihood with ten random restarts. Besides the "
                        "mean estimate, the posterior gives a predictive standard deviation, which we "
                        "report as a 95% interval. A short length scale indicates a feature on which "
                        "the SoH depends strongly.",
                    ],
                ),
            ],
        ),
        Section(
            "Experiments",
            [],
            subsections=[
                Section(
                    "Ageing Campaign",
                    [
                        "We aged 48 commercial 18650 cells with a blended LMO-NMC cathode, a graphite "
                        "anode and a rated capacity of 2.2 Ah. The cells were cycled between 3.0 V and "
                        "4.2 V at 1C charge and 1C discharge in four groups of twelve, at 25 °C or 35 °C "
                        "and with either full or 20% to 80% state-of-charge windows, to obtain "
                        "different degradation paths. Every 50 cycles the cycling was paused for a "
                        "capacity test at C/3 and an impedance measurement. The campaign ran until each "
                        "cell fell below 75% SoH or reached 1,500 cycles, and produced 1,536 spectra, "
                        "of which 1,493 passed the Kramers-Kronig check.",
                    ],
                ),
                Section(
                    "Evaluation Protocol",
                    [
                        "We split the data by cell, not by spectrum, so that no test cell contributes "
                        "to training: 36 cells, nine from each group, were used for training and the "
                        "remaining 12 for testing. The split was fixed before any model was tuned. "
                        "Baselines were ridge regression on the parameters of a fitted circuit with "
                        "two resistor-constant-phase-element pairs and a Warburg element, ridge "
                        "regression on the real and imaginary impedance at five frequencies, and a "
                        "fully connected neural network with two hidden layers of 64 units trained on "
                        "the whole spectrum. All models were evaluated by the root-mean-square error "
                        "(RMSE) and the maximum absolute error of SoH on the test cells.",
                    ],
                ),
            ],
        ),
        Section(
            "Results",
            [],
            subsections=[
                Section(
                    "Estimation Accuracy",
                    [
                        "On the 12 test cells, the DRT-GPR estimator reached an RMSE of 1.12% SoH and a "
                        "maximum absolute error of 3.4% SoH (Table 1). Regression on equivalent-circuit "
                        "parameters gave an RMSE of 2.31%, mainly because circuit fits of strongly aged "
                        "cells occasionally swapped the attribution of the two semicircles, and the "
                        "five-frequency baseline gave 1.86%. The neural network reached 1.64% but with "
                        "a larger maximum error of 6.0%, which occurred on a cell from the 35 °C "
                        "full-window group.",
                        "The predictive intervals of the Gaussian process were well calibrated: 93.8% "
                        "of the test estimates lay within their 95% interval. The interval widened "
                        "visibly for the most aged cells, which are underrepresented in the training "
                        "data, and this widening is a useful warning that an estimate is less reliable.",
                    ],
                    tables=[
                        Table(
                            "State-of-health estimation error on the 12 test cells.",
                            ["Method", "Features", "RMSE (% SoH)", "Max. error (% SoH)"],
                            [
                                ["DRT-GPR (this work)", "9 DRT features", "1.12", "3.4"],
                                ["Circuit + ridge", "6 circuit parameters", "2.31", "7.2"],
                                ["Five-frequency ridge", "10 impedance values", "1.86", "5.1"],
                                ["Neural network", "full spectrum", "1.64", "6.0"],
                            ],
                        )
                    ],
                ),
                Section(
                    "Feature Relevance",
                    [
                        "The fitted length scales rank the cathode charge-transfer resistance R_3 as "
                        "the most informative feature, followed by the log time constant of the anode "
                        "peak P2 and the ohmic resistance. Figure 1 shows why: between a fresh cell and "
                        "a cell at 74% SoH, the area of P3 more than doubles, whereas P1 grows by about "
                        "half. The diffusion peak P4 carried little information, partly because the "
                        "lowest measured frequency of 10 mHz only covers its high-frequency flank.",
                        "Removing the four time-constant features increased the RMSE from 1.12% to "
                        "1.39%, showing that the peak positions carry information beyond the "
                        "resistances. Replacing peak areas by peak heights increased it to 1.58%, "
                        "confirming that areas are the more stable features.",
                    ],
                    figures=[
                        Figure(
                            "Distribution of relaxation times of one cell at 100%, 88% and 74% SoH; "
                            "the four peaks P1 to P4 grow with ageing, P3 most strongly.",
                            series=[
                                Series("SoH 100%", *_FRESH),
                                Series("SoH 88%", *_MID),
                                Series("SoH 74%", *_AGED),
                            ],
                            xlabel="Time constant τ (s)",
                            ylabel="γ (mΩ)",
                            logx=True,
                            aspect=0.5,
                        )
                    ],
                ),
                Section(
                    "Temperature Robustness",
                    [
                        "To test robustness to temperature, we measured additional spectra of the 12 "
                        "test cells at 15 °C and 35 °C at their final checkup. Applied to the 15 °C "
                        "spectra without correction, the estimator, trained at 25 °C only, "
                        "overestimated the ageing and its RMSE rose to 3.9%. We therefore normalise all "
                        "resistances with an Arrhenius factor whose temperature is inferred from the "
                        "ohmic resistance, which depends on temperature through the electrolyte "
                        "conductivity but changes only slowly with ageing. With this normalisation, "
                        "the RMSE at 15 °C was 1.48% and at 35 °C 1.31%, without retraining and without "
                        "a temperature sensor.",
                    ],
                ),
                Section(
                    "Shortened Measurements",
                    [
                        "The lowest frequencies dominate the 21-minute measurement time, so we also "
                        "evaluated truncated spectra. Restricting the measurement to the range from "
                        "10 kHz to 0.1 Hz shortens it to 2.5 minutes. The DRT is then computed on the "
                        "truncated spectrum with the same regularisation, and the diffusion peak P4, "
                        "which is no longer resolved, is dropped from the feature vector.",
                        "On the test cells, the estimator based on truncated spectra reached an RMSE of "
                        "1.21% SoH, only slightly worse than with the full spectrum, because the three "
                        "most informative peaks all lie at frequencies above 0.1 Hz. The predictive "
                        "intervals widened by about 10% on average. For applications such as "
                        "second-life grading, where many cells must be measured in sequence, this "
                        "eightfold reduction of measurement time outweighs the small loss of accuracy.",
                    ],
                ),
            ],
        ),
        Section(
            "Conclusions",
            [
                "Distribution of relaxation times features give a compact, model-free description "
                "of impedance spectra that tracks cell ageing well. Combined with Gaussian process "
                "regression, they estimated the state of health of unseen cells with half the error "
                "of equivalent-circuit parameters and with calibrated uncertainty, and an Arrhenius "
                "normalisation based on the ohmic resistance made the estimate robust to 10 K "
                "temperature deviations. Computing the DRT and the estimate takes 35 ms on a "
                "laptop processor, so the method is compatible with on-board impedance hardware. "
                "Truncating the spectrum at 0.1 Hz cuts the measurement to 2.5 minutes at a small "
                "cost in accuracy; we plan to validate this short protocol on vehicle hardware.",
            ],
        ),
    ],
    references=[
        "F. Aubert and L. Schenk. Tikhonov-regularised relaxation time distributions for battery "
        "impedance. Journal of Impedance Analysis, 12(2):88–103, 2019.",
        "R. Gupta, J. Weber and N. Ito. Equivalent circuit ambiguity in aged lithium-ion cells. Battery "
        "Diagnostics Review, 7(1):15–29, 2021.",
        "M. Oyelaran and S. Petit. Kramers-Kronig validation of galvanostatic spectra. Journal of Impedance "
        "Analysis, 10(4):233–241, 2017.",
        "C. Dupont and A. Varga. Gaussian processes for battery health with automatic relevance "
        "determination. Machine Learning for Energy Systems, 2:61–74, 2020.",
        "T. Brennan, Y. Liu and K. Adler. On-board impedance spectroscopy with battery management "
        "hardware. Transport Electrification Reports, 5:12–26, 2023.",
        "H. Mikkelsen. Temperature normalisation of impedance features. Proceedings of the Symposium on "
        "Energy Storage Ageing, pages 117–124, 2022.",
        "S. Arora and P. Kim. Neural networks on full impedance spectra for health estimation. Machine "
        "Learning for Energy Systems, 3:5–19, 2021.",
    ],
)

QUESTIONS = [
    {
        "question": "What root-mean-square error did the DRT-GPR estimator reach on the 12 test cells?",
        "answer": "RMSE of 1.12% SoH",
        "heading": "5.1 Estimation Accuracy",
    },
    {
        "question": "How many impedance spectra were rejected by the Kramers-Kronig test?",
        "answer": "43 spectra",
        "heading": "3.1 Impedance Measurement",
    },
    {
        "question": "What RMSE did the temperature-normalised impedance estimator reach on spectra measured at 15 °C?",
        "answer": "the RMSE at 15 °C was 1.48%",
        "heading": "5.3 Temperature Robustness",
    },
]
