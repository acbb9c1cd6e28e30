"""Demo paper 8: screening retired EV modules for a second-life storage system (fictional)."""

from __future__ import annotations

from vectree.demo.model import Figure, Paper, Section, Series, Table

SLUG = "second-life-modules"

PAPER = Paper(
    slug=SLUG,
    title="Second-Life Screening of Retired Electric-Vehicle Modules for Stationary Peak Shaving",
    authors=["Hannah Osei", "Marco Ricci", "Liisa Koskinen"],
    affiliation="Circular Energy Research Group, Westbrook University of Applied Sciences",
    keywords=["second life", "repurposing", "rapid screening", "peak shaving", "levelised cost of storage"],
    abstract=(
        "Batteries retired from electric vehicles usually keep most of their capacity and could "
        "serve for years in less demanding stationary applications, but assessing each module "
        "with a full capacity test is slow and expensive. We retired 64 modules from a fleet of "
        "urban delivery vans after about eight years of service and developed a rapid screening "
        "procedure based on current pulses and voltage relaxation that estimates module capacity "
        "in minutes instead of hours. Modules were graded into three classes for stationary use, "
        "low-power use or recycling. The best-graded modules were matched into strings and "
        "assembled into a battery that has shaved the peak grid demand of a supermarket for 18 "
        "months. We report the accuracy of the screening against full capacity tests, the "
        "degradation observed in the field, which was slower than in vehicle service, and a "
        "cost comparison with a new stationary battery. Repurposing was economically attractive "
        "mainly because the screening step, which dominated labour costs in earlier projects, "
        "became cheap."
    ),
    sections=[
        Section(
            "Introduction",
            [
                "Electric-vehicle batteries are usually replaced when their capacity has fallen "
                "to between 70% and 80% of the original value, because the vehicle's range becomes "
                "unacceptable. For stationary storage, where weight and volume matter little and "
                "power demands are moderate, such batteries remain useful. A second life can delay "
                "recycling by years and spread the environmental burden of cell production over a "
                "longer service.",
                "The economic case depends on the cost of repurposing. Retired packs come with "
                "uncertain histories, and modules of the same pack can differ considerably in "
                "capacity and resistance. Testing every module with a full charge and discharge "
                "cycle takes many hours and occupies expensive test equipment; in previous "
                "repurposing projects, testing accounted for a large share of the labour cost. A "
                "fast screening method that is accurate enough to grade modules is therefore the "
                "key enabler.",
                "This paper describes a complete second-life project: the retired module "
                "population, a rapid screening method and its validation, the design of a "
                "stationary battery from graded modules, its performance during 18 months of peak "
                "shaving at a supermarket, and an economic assessment.",
            ],
        ),
        Section(
            "Retired Module Population",
            [
                "The 64 modules came from eight delivery vans of a municipal logistics fleet, "
                "retired after a mean service life of 8.2 years and a mean mileage of 142,000 km. "
                "Each van carried a pack of eight modules. A module contains twelve pouch cells "
                "with a blended LMO-NMC cathode and a graphite anode in a six-series, "
                "two-parallel configuration, with a nominal capacity of 80 Ah, a nominal voltage "
                "of 22.2 V and a nominal energy of 1.78 kWh.",
                "The fleet operator's telematics provided the vehicles' charging records but not "
                "module-level data. The vans had been charged almost exclusively overnight at 7 kW "
                "and parked in an unheated depot, so the modules had experienced moderate "
                "currents and many winter nights below 0 °C. Visual inspection found no swelling or "
                "corrosion, and all modules were accepted for testing.",
            ],
        ),
        Section(
            "Rapid Screening Method",
            [],
            subsections=[
                Section(
                    "Pulse and Relaxation Test",
                    [
                        "The screening test starts from the state of charge at which the module arrives, "
                        "which was between 30% and 60% for all modules. It applies a 10 s discharge "
                        "pulse at 1C, a rest of 40 s, a 10 s charge pulse at 1C and a five-minute rest, "
                        "and then repeats the discharge pulse after removing 10% of the capacity at 1C. "
                        "The whole sequence takes 9 minutes per module, compared with about six hours "
                        "for a full capacity test at C/3 including rest periods.",
                        "From the recorded voltages we extract the 10 s pulse resistance at both "
                        "states of charge, the voltage recovery during the five-minute rest, and the "
                        "change of open-circuit voltage caused by removing 10% of the nominal capacity. "
                        "The last feature is a differential measurement of the open-circuit voltage "
                        "slope, which is informative about the remaining capacity because an aged "
                        "module's voltage falls faster per ampere-hour removed.",
                    ],
                ),
                Section(
                    "Capacity Model",
                    [
                        "A linear regression with four features maps the screening measurements to the "
                        "module state of health, defined as the C/3 capacity divided by the nominal "
                        "capacity. It was trained on 16 modules, which also received full capacity "
                        "tests, and evaluated on the other 48. On these, the screening estimate had a "
                        "mean absolute error of 1.9% SoH and a maximum error of 4.8% SoH. The open-"
                        "circuit voltage slope was the most important feature; resistance alone gave "
                        "a mean absolute error of 4.1% SoH, because resistance and capacity were only "
                        "moderately correlated in this population.",
                    ],
                ),
                Section(
                    "Grading Rules",
                    [
                        "Modules are graded by estimated SoH and by the spread of cell-group voltages "
                        "read from the module's own sensing wires (Table 1). Grade A requires a state of "
                        "health of at least 80% and a voltage spread below 20 mV; these modules go to "
                        "stationary storage. Grade B covers modules between 70% and 80%, which are "
                        "reserved for low-power uses such as backup supplies. All other modules, "
                        "including any with a voltage spread above 50 mV, are Grade C and go to "
                        "recycling.",
                        "Of the 64 modules, 29 modules were graded A, 24 were graded B and 11 were "
                        "graded C. Compared with grading based on full capacity tests, the screening "
                        "assigned the same grade to 58 modules, an agreement of 91%. All six "
                        "disagreements concerned modules within 2% SoH of a class boundary, and none "
                        "moved a module by two classes.",
                    ],
                    tables=[
                        Table(
                            "Grading classes for retired modules and the outcome for the 64 modules.",
                            ["Grade", "Criteria", "Destination", "Modules"],
                            [
                                ["A", "SoH ≥ 80%, voltage spread < 20 mV", "stationary storage", "29"],
                                ["B", "70% ≤ SoH < 80%", "low-power uses", "24"],
                                ["C", "SoH < 70% or spread > 50 mV", "recycling", "11"],
                            ],
                        )
                    ],
                    figures=[
                        Figure(
                            "Distribution of the screened state of health over the 64 retired modules, in "
                            "5% bins.",
                            kind="bar",
                            series=[
                                Series("", ["60–65", "65–70", "70–75", "75–80", "80–85", "85–90"], [2, 9, 11, 13, 22, 7]),
                            ],
                            xlabel="State of health (%)",
                            ylabel="Number of modules",
                            width=0.58,
                            aspect=0.6,
                        )
                    ],
                ),
            ],
        ),
        Section(
            "Repurposed System Design",
            [],
            subsections=[
                Section(
                    "Module Matching",
                    [
                        "The stationary battery uses 24 of the Grade-A modules in four parallel "
                        "strings of six modules in series, giving a nominal string voltage of 133 V. "
                        "Because the weakest module limits a series string, modules were sorted by "
                        "their measured capacity and assigned to strings so that the capacity spread "
                        "within each string stayed below 3%. The five remaining Grade-A modules are "
                        "kept as spares. With a mean state of health of 83% in the installed modules, "
                        "the battery stores 35.5 kWh, of which 30 kWh are used between 10% and 95% "
                        "state of charge.",
                    ],
                ),
                Section(
                    "Battery Management",
                    [
                        "The original module electronics were replaced by a new battery management "
                        "system with cell-group voltage sensing, two temperature sensors per module and "
                        "passive balancing at 50 mA. The system limits the current to 0.5C, a third of "
                        "the rating in vehicle service, and is coupled to the grid by a 30 kW "
                        "bidirectional inverter. A string whose capacity falls 5% below the others is "
                        "disconnected automatically, so that a failing module can be exchanged for a "
                        "spare without stopping the whole battery.",
                    ],
                ),
                Section(
                    "Safety and Commissioning",
                    [
                        "Because the thermal history of retired modules is uncertain, each Grade-A module "
                        "underwent an additional insulation resistance test at 500 V and a 24-hour "
                        "self-discharge check before installation; a module whose open-circuit voltage "
                        "fell by more than 5 mV in 24 hours would have been rejected, but none was. "
                        "The battery room was equipped with off-gas detection and an aerosol "
                        "extinguishing system, and the enclosure separates the four strings with "
                        "fire-resistant partitions.",
                        "Commissioning consisted of three full cycles at 0.2C with the inverter in "
                        "test mode, during which the balancing system reduced the initial cell-group "
                        "voltage spread within strings from 58 mV to 12 mV. The battery entered "
                        "regular peak-shaving service one week after delivery of the modules to the "
                        "site.",
                    ],
                ),
            ],
        ),
        Section(
            "Field Operation",
            [],
            subsections=[
                Section(
                    "Duty Cycle",
                    [
                        "The battery was installed at a supermarket whose electricity tariff includes "
                        "a monthly demand charge on the highest 15-minute average power. The controller "
                        "discharges the battery whenever the site load exceeds a threshold that is "
                        "adjusted daily from a load forecast, and recharges it at night. Over 18 "
                        "months, the battery performed 0.62 equivalent full cycles per day on average, "
                        "with the largest throughput in summer, when refrigeration loads peak.",
                        "The highest monthly peak demand of the site fell from 148 kW to 126 kW, "
                        "averaged over the 18 months of operation. The threshold had to be exceeded in "
                        "only four months, each time because of an unforecast refrigeration defrost "
                        "cycle coinciding with the afternoon peak.",
                    ],
                ),
                Section(
                    "Observed Degradation",
                    [
                        "Capacity tests of the whole battery were carried out every six months. The "
                        "usable capacity decreased by 2.3% over 18 months, or about 1.5% per year, "
                        "which is slower than the fade of roughly 2.6% per year that the modules had "
                        "experienced in the vans. The gentler duty, with low currents and a battery "
                        "room held between 18 °C and 26 °C, explains the difference. No string was "
                        "disconnected during the observation period, and the largest voltage spread "
                        "between modules at the end of discharge grew from 31 mV to 44 mV.",
                        "If the fade continues at the observed rate, the battery will reach 70% of its "
                        "initial second-life capacity after about 20 years, well beyond the planned "
                        "ten-year operation. In practice, a knee in the fade curve is likely earlier, "
                        "and we will continue the capacity tests to detect it.",
                    ],
                ),
            ],
        ),
        Section(
            "Economic Assessment",
            [
                "The repurposing cost was 96 EUR per kWh of installed capacity, comprising the "
                "purchase of the retired modules, screening, the new battery management system, "
                "enclosure, installation and labour. Screening accounted for only 7% of this cost, "
                "compared with about 30% in projects that use full capacity tests. A new stationary "
                "battery of the same usable capacity was quoted at 310 EUR per kWh.",
                "With the observed peak reduction, the demand charges of the supermarket fell by "
                "6,900 EUR per year. Including inverter and maintenance costs, the levelised cost "
                "of storage over a ten-year life is 0.19 EUR per kWh for the second-life battery and "
                "0.24 EUR per kWh for the new battery, and the simple payback time of the "
                "second-life system is 4.1 years. The comparison favours second life even if the "
                "repurposed battery lasts only seven years, as long as the screening remains cheap.",
            ],
        ),
        Section(
            "Conclusions",
            [
                "A rapid pulse-and-relaxation test estimated the state of health of retired "
                "electric-vehicle modules with an error of about two percent and assigned the same "
                "grade as full capacity tests to nine out of ten modules. Graded and matched "
                "modules formed a stationary battery that reduced the peak demand of a supermarket "
                "and aged slowly during 18 months of operation. Because the screening cost almost "
                "nothing compared with full tests, the second-life battery was cheaper per stored "
                "kilowatt-hour than a new one. The next step is to automate the screening for "
                "whole packs without disassembly.",
            ],
        ),
    ],
    references=[
        "J. Moreno and S. Keller. Second-life applications of automotive batteries: a review. Journal of "
        "Circular Energy, 3(1):1–20, 2020.",
        "A. Lindberg, T. Chukwu and E. Rossi. Cost structure of battery repurposing. Energy Economics of "
        "Mobility, 5:88–101, 2021.",
        "K. Watanabe and M. Dubois. Pulse-based capacity estimation for retired modules. Battery "
        "Diagnostics Review, 7(3):155–167, 2021.",
        "R. Fischer. Demand-charge reduction with behind-the-meter storage. Journal of Grid Services, "
        "9:210–223, 2019.",
        "P. Antonelli, H. Berg and C. Yusuf. Module heterogeneity in retired electric-vehicle packs. "
        "Journal of Cell Durability, 15(4):333–345, 2022.",
        "S. O'Neill and L. Park. Safety requirements for repurposed lithium-ion batteries. Proceedings "
        "of the Workshop on Battery Reuse, pages 22–29, 2022.",
    ],
)

QUESTIONS = [
    {
        "question": "How long does the rapid pulse-and-relaxation screening test take per retired module?",
        "answer": "9 minutes per module",
        "heading": "3.1 Pulse and Relaxation Test",
    },
    {
        "question": "How many of the 64 retired modules were graded A?",
        "answer": "29 modules were graded A",
        "heading": "3.3 Grading Rules",
    },
    {
        "question": "How much did the second-life battery reduce the supermarket's highest monthly peak demand?",
        "answer": "from 148 kW to 126 kW",
        "heading": "5.1 Duty Cycle",
    },
]
