"""Demo paper 2: rate-limiting step of SEI growth from microcalorimetry (fictional, written for vectree)."""

from __future__ import annotations

from vectree.demo.model import Figure, Paper, Section, Series, Table

SLUG = "sei-growth-calorimetry"

_HOURS = [10, 20, 50, 100, 200, 400, 700, 1000]

PAPER = Paper(
    slug=SLUG,
    title=(
        "Solvent Diffusion or Electron Tunnelling? Identifying the Rate-Limiting Step of "
        "SEI Growth with Isothermal Microcalorimetry and Temperature Steps"
    ),
    authors=["Daniel Ferreira", "Aiko Tanabe", "Samuel Whitcombe"],
    affiliation="Department of Materials Chemistry, Kestrel Bay University",
    keywords=["solid electrolyte interphase", "parasitic heat flow", "microcalorimetry", "growth kinetics"],
    abstract=(
        "The solid electrolyte interphase (SEI) on graphite protects the electrolyte from "
        "reduction, yet its slow thickening consumes lithium throughout a cell's life. Several "
        "transport mechanisms have been proposed to limit that thickening, and they predict "
        "nearly the same square-root-of-time capacity fade, so fade curves alone cannot tell "
        "them apart. We measured the parasitic heat flow of LFP/graphite cylindrical cells held "
        "at constant voltage in an isothermal microcalorimeter for 1,000 hours and converted it "
        "into a parasitic reduction current. Step changes of the calorimeter temperature during "
        "the hold reveal how the growth rate responds to temperature at constant interphase "
        "thickness, which separates mechanisms whose thickness dependence is similar but whose "
        "temperature dependence is not. The instantaneous response to a temperature step is "
        "inconsistent with pure electron tunnelling and with pure solvent diffusion; a mixed "
        "model in which neutral lithium interstitials migrate through the inner interphase "
        "describes all holds and steps with one parameter set. We discuss what this means for "
        "extrapolating storage life from accelerated tests."
    ),
    sections=[
        Section(
            "Introduction",
            [
                "Every lithium-ion cell with a graphite anode relies on a passivating film, the "
                "solid electrolyte interphase (SEI), that forms from reduction products of the "
                "electrolyte during the first charge. The film is electronically insulating enough "
                "to slow further reduction but not to stop it, and the continued growth consumes "
                "cyclable lithium. In cells with a lithium iron phosphate (LFP) cathode, which "
                "degrades very little itself, SEI growth is responsible for nearly all of the "
                "capacity lost during storage.",
                "Because the growth slows as the film thickens, capacity fade often follows the "
                "square root of time. This behaviour has been explained by at least three "
                "rate-limiting steps: diffusion of solvent molecules through the porous outer "
                "film to the graphite surface, tunnelling of electrons from the graphite through "
                "the dense inner film, and migration of neutral lithium interstitials through the "
                "inner film to the outer surface. All three produce a growth rate inversely "
                "proportional to thickness, or close to it, over the time scale of typical ageing "
                "tests, which is why fitting fade curves cannot discriminate between them.",
                "The mechanisms differ, however, in how the growth rate responds to temperature. "
                "Electron tunnelling through a fixed barrier is almost independent of temperature, "
                "whereas solvent diffusion and interstitial migration are thermally activated with "
                "different activation energies. If the temperature is changed abruptly, the "
                "thickness does not change at first, so the immediate change in growth rate "
                "isolates the temperature dependence of the transport step. We exploit this idea "
                "with isothermal microcalorimetry, which measures the growth rate directly through "
                "the heat released by the reduction reactions.",
            ],
        ),
        Section(
            "Theory of SEI Growth",
            [
                "We write the SEI thickness as L(t) and the parasitic current density as j, which "
                "is proportional to dL/dt. The three candidate models differ in the expression for "
                "j as a function of L and temperature T.",
            ],
            subsections=[
                Section(
                    "Solvent-Diffusion Limitation",
                    [
                        "If solvent molecules must diffuse through the porous outer SEI before they can "
                        "be reduced at the graphite surface, the parasitic current is j = F·D_s·c_s/L, "
                        "where D_s is the effective solvent diffusivity in the film and c_s the solvent "
                        "concentration in the bulk electrolyte. The diffusivity follows an Arrhenius "
                        "law, so the immediate response to a temperature step is a jump of the "
                        "parasitic current by the factor exp(E_D/R·(1/T_1 − 1/T_2)) with the diffusion "
                        "activation energy E_D. The current does not depend on the graphite potential.",
                    ],
                ),
                Section(
                    "Electron-Tunnelling Limitation",
                    [
                        "If electrons must tunnel through a dense inner layer, the current decays "
                        "exponentially with the inner thickness, j ∝ exp(−L/λ) with a tunnelling length "
                        "λ of about 2 nm. Integrated over time, this yields a logarithmic rather than a "
                        "square-root growth law, but over two decades of time the two are hard to "
                        "distinguish within measurement noise. Tunnelling is essentially independent of "
                        "temperature; a temperature step should therefore produce no immediate change "
                        "in parasitic current beyond the small change in reaction enthalpy.",
                    ],
                ),
                Section(
                    "Interstitial Migration",
                    [
                        "In the third picture, lithium atoms enter the inner SEI as neutral interstitials "
                        "at the graphite side and migrate outward, where they reduce the electrolyte. "
                        "The current is j = F·D_i·c_i(U)/L, where the interstitial concentration c_i "
                        "at the graphite side depends exponentially on the anode potential U. This "
                        "model combines the 1/L dependence of diffusion with a potential dependence "
                        "that the solvent-diffusion model lacks, and its activation energy is the sum "
                        "of a migration barrier and the formation energy of the interstitial.",
                    ],
                ),
            ],
        ),
        Section(
            "Experimental",
            [],
            subsections=[
                Section(
                    "Cells",
                    [
                        "We used commercial 26650 cylindrical cells with an LFP cathode, a graphite "
                        "anode and a nominal capacity of 2.6 Ah. The cells had completed formation at "
                        "the factory and were then cycled five times at C/2 in our laboratory to "
                        "stabilise the capacity. Twelve cells were selected for the calorimetry study, "
                        "with a spread of initial capacity below 0.3%.",
                    ],
                ),
                Section(
                    "Isothermal Microcalorimetry",
                    [
                        "The measurements were carried out in a twelve-channel isothermal heat-flow "
                        "microcalorimeter with a baseline stability of 0.2 µW over 24 hours. Each cell "
                        "was charged to 3.40 V at C/10 outside the calorimeter and then held at that "
                        "voltage inside it while the heat flow and the float current were recorded every "
                        "60 s. At 3.40 V the graphite electrode sits on its stage-1 plateau, so the "
                        "anode potential is nearly constant during the hold.",
                        "Under potentiostatic conditions, the measured heat flow is the sum of the "
                        "entropic and polarisation contributions of the float current and the heat of "
                        "the parasitic reduction. We separated the parasitic contribution using the "
                        "enthalpy of 1.65 eV per reduced lithium measured in a separate calibration, and "
                        "converted it into an equivalent parasitic current.",
                    ],
                ),
                Section(
                    "Temperature-Step Protocol",
                    [
                        "Six cells were held at a constant 30 °C for 1,000 hours. The other six cells "
                        "experienced temperature steps: after 200 hours at 30 °C, the calorimeter was "
                        "switched to 40 °C for 48 hours, returned to 30 °C, then switched to 20 °C for "
                        "48 hours and returned to 30 °C again. This sequence was repeated at 500 hours "
                        "and at 800 hours. A step took 35 minutes to settle, and the first 2 hours after "
                        "every step were excluded from the analysis to avoid thermal transients.",
                    ],
                ),
            ],
        ),
        Section(
            "Results",
            [],
            subsections=[
                Section(
                    "Parasitic Heat Flow during Constant-Voltage Holds",
                    [
                        "In the isothermal holds at 30 °C, the parasitic heat flow decayed from 41.0 µW "
                        "per Ah of cell capacity after 10 hours to 3.6 µW per Ah after 1,000 hours "
                        "(Figure 1). On a log-log plot the decay has a slope of −0.50 up to about 300 "
                        "hours and steepens to −0.62 afterwards. The integrated parasitic charge after "
                        "1,000 hours corresponds to a capacity loss of 0.48%, which agrees within 0.05 "
                        "percentage points with the capacity difference measured after the holds.",
                        "The float current measured by the potentiostat was consistently about 12% "
                        "higher than the parasitic current derived from heat flow. We attribute the "
                        "difference to a small shuttle current of iron species, which carries charge "
                        "without net heat release and does not consume lithium.",
                    ],
                    figures=[
                        Figure(
                            "Parasitic heat flow per Ah of cell capacity during a 1,000-hour hold at 3.40 V "
                            "and 30 °C, with power-law guides of slope −0.50 and −0.62.",
                            series=[
                                Series("measured, 30 °C", _HOURS, [41.0, 29.3, 18.1, 13.1, 9.1, 6.3, 4.4, 3.6], "o"),
                                Series("slope −0.50", [10, 300], [41.0, 41.0 * (300 / 10) ** -0.5], "--"),
                                Series("slope −0.62", [300, 1000], [7.49, 7.49 * (1000 / 300) ** -0.62], ":"),
                            ],
                            xlabel="Hold time (h)",
                            ylabel="Parasitic heat flow (µW/Ah)",
                            logx=True,
                            logy=True,
                        )
                    ],
                ),
                Section(
                    "Response to Temperature Steps",
                    [
                        "Each temperature step produced an immediate change of the parasitic heat flow "
                        "that was complete once the calorimeter had settled. Stepping from 30 °C to "
                        "40 °C raised the parasitic current by a factor of 1.97 on average over the "
                        "three repetitions, and stepping from 30 °C to 20 °C lowered it by a factor of "
                        "2.08. These ratios correspond to an apparent activation energy of 54.6 kJ/mol "
                        "for the transport step at constant thickness.",
                        "After returning to 30 °C, the heat flow did not go back to the value it would "
                        "have reached without the step. After a 40 °C excursion it was 4% lower, and "
                        "after a 20 °C excursion 3% higher, than the trend of the isothermal cells. This "
                        "memory is what thickness-controlled growth predicts: the film grew faster "
                        "during the warm excursion and is now thicker, and slower during the cold one.",
                    ],
                ),
                Section(
                    "Model Discrimination",
                    [
                        "We fitted each model jointly to all twelve cells, isothermal and stepped, and "
                        "compared them with the Akaike information criterion (Table 1). The tunnelling "
                        "model cannot reproduce the immediate factor-of-two response to a 10 K step and "
                        "is rejected. The solvent-diffusion model fits the isothermal decay and the "
                        "steps, but only with a solvent diffusivity whose activation energy is "
                        "twice the value measured for solvent transport in harvested SEI films, and it "
                        "fails to reproduce the steepening of the decay after 300 hours.",
                        "The interstitial-migration model describes all data with a single parameter "
                        "set. Its fitted migration activation energy is 0.57 eV, and the steepening of "
                        "the decay emerges naturally from a slow drift of the graphite potential as the "
                        "cell loses lithium during the hold. The model is preferred by an AIC margin of "
                        "38 over the solvent-diffusion model, which corresponds to overwhelming "
                        "statistical support.",
                    ],
                    tables=[
                        Table(
                            "Joint fits of the three SEI growth models to twelve calorimetry cells.",
                            ["Model", "Free parameters", "RMS residual (µW/Ah)", "ΔAIC"],
                            [
                                ["Solvent diffusion", "3", "0.94", "38"],
                                ["Electron tunnelling", "3", "2.71", "412"],
                                ["Interstitial migration", "4", "0.38", "0"],
                            ],
                        )
                    ],
                ),
                Section(
                    "Potential Dependence of the Growth Rate",
                    [
                        "To test the potential dependence predicted by the interstitial-migration model, "
                        "two additional cells were held at 3.32 V instead of 3.40 V. At 3.32 V the "
                        "graphite electrode sits at the transition between its stage-2 and stage-1 "
                        "plateaus, and its potential is about 35 mV higher than at 3.40 V. After 200 "
                        "hours, the parasitic heat flow of these cells was 31% lower than that of the "
                        "cells held at 3.40 V, close to the 27% reduction that the interstitial-migration "
                        "model predicts with the parameters fitted to the temperature-step data.",
                        "The solvent-diffusion model, which has no dependence on the anode potential, "
                        "predicts no reduction at all, and the tunnelling model predicts only a reduction "
                        "of a few percent through the slightly smaller driving force for electron "
                        "transfer. The low-voltage holds are thus an independent check that "
                        "does not rely on temperature, and they support the conclusion drawn from the "
                        "steps. Repeating them at several voltages would map the potential dependence "
                        "of the interstitial concentration directly.",
                    ],
                ),
            ],
        ),
        Section(
            "Implications for Lifetime Prediction",
            [
                "Accelerated storage tests at elevated temperature are routinely extrapolated to room "
                "temperature with an Arrhenius factor fitted to capacity fade. Our results show why "
                "such extrapolations can mislead: the fade rate at a given time depends both on the "
                "activation energy of the transport step and on the thickness that the film has "
                "reached, and the thickness itself depends on the temperature history. A cell aged "
                "for 100 days at 50 °C has a thicker film than one aged for 100 days at 25 °C, so its "
                "current growth rate is lower than an Arrhenius scaling of the fresh-cell rate would "
                "suggest.",
                "Because the interstitial-migration model ties the growth rate to the graphite "
                "potential, it also predicts that storage at low state of charge, where the anode "
                "potential is higher, slows SEI growth more than the solvent-diffusion model would. "
                "For LFP cells this favours storage below 30% state of charge. A calorimetric "
                "temperature-step test of about 300 hours is enough to determine the transport "
                "activation energy of a new cell design, which is far shorter than the months of "
                "storage usually needed to fit a calendar ageing model.",
            ],
        ),
        Section(
            "Conclusions",
            [
                "Temperature steps during constant-voltage holds in an isothermal microcalorimeter "
                "separate the thickness dependence of SEI growth from its temperature dependence. "
                "For LFP/graphite cells at 3.40 V, the immediate response to a 10 K step rules out "
                "electron tunnelling as the rate-limiting step, and a model of neutral interstitial "
                "migration through the inner SEI explains both the isothermal decay and the step "
                "responses better than solvent diffusion. We recommend temperature-step calorimetry "
                "as a short screening test before long calendar ageing campaigns.",
            ],
        ),
    ],
    references=[
        "R. Okonkwo and B. Lisle. Parasitic heat flow as a probe of interphase growth. Thermal Analysis of "
        "Energy Materials, 7(4):301–314, 2020.",
        "J. Marchetti, F. Duval and S. Iqbal. Neutral lithium interstitials in inorganic interphase phases. "
        "Computational Electrochemistry Letters, 3:55–63, 2019.",
        "K. Sørensen. Electron tunnelling limits of passivating films on carbon. Journal of Interfacial "
        "Ionics, 22(1):17–29, 2017.",
        "M. Quiroga and P. Stein. Solvent transport through harvested interphase films. Journal of "
        "Interfacial Ionics, 25(3):240–252, 2021.",
        "T. Albrecht, W. Huang and E. Moreau. Float current analysis of LFP/graphite cells. Battery "
        "Diagnostics Review, 5(1):9–21, 2019.",
        "H. Yilmaz and G. Cordero. Pitfalls of Arrhenius extrapolation for storage ageing. Proceedings of "
        "the Symposium on Energy Storage Ageing, pages 51–58, 2021.",
    ],
)

QUESTIONS = [
    {
        "question": "What apparent activation energy did the temperature steps give for the SEI transport step at constant thickness?",
        "answer": "54.6 kJ/mol",
        "heading": "4.2 Response to Temperature Steps",
    },
    {
        "question": "What baseline stability did the isothermal microcalorimeter used for the SEI study have?",
        "answer": "0.2 µW over 24 hours",
        "heading": "3.2 Isothermal Microcalorimetry",
    },
    {
        "question": "Which SEI growth model was preferred by the Akaike information criterion, and by what margin over solvent diffusion?",
        "answer": "AIC margin of 38",
        "heading": "4.3 Model Discrimination",
    },
]
