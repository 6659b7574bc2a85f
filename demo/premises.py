"""The demo premises: sentences we wrote ourselves in each genre's style, none from a corpus, some
with three written hypotheses (demo.content loads them).
"""

from collections.abc import Iterator, Sequence
from typing import Any

from corpus.models import Genre, Split

# Splits cycle through these patterns: training genres 60/20/20, held-out genres dev/test only.
TRAINING_SPLITS = [Split.TRAIN, Split.DEV, Split.TEST, Split.TRAIN, Split.TRAIN]
HELD_OUT_SPLITS = [Split.DEV, Split.TEST]
WRITTEN_PREMISES_PER_GENRE = 4  # the first four premises of each genre come with three written hypotheses

# genre slug -> premises; the first four are followed by their (entailment, neutral, contradiction) hypotheses.
PREMISES: dict[str, list[Any]] = {
    "fiction": [
        (
            "Marta pushed the cellar door open with her shoulder and waited until her eyes could make out the shapes of the barrels.",
            (
                "Marta went through a door.",
                "Marta was looking for something hidden in the cellar.",
                "Marta could see everything in the cellar at once.",
            ),
        ),
        (
            "The old prospector spat into the dust, squinted at the sun and declared that the stage would not reach Silver Bend before dark.",
            (
                "The prospector made a prediction about the stage.",
                "The prospector had lived in Silver Bend for years.",
                "The prospector said the stage would arrive long before nightfall.",
            ),
        ),
        (
            "When the ship's computer finally answered, its voice was slower than usual, as if it had to search for each word.",
            (
                "The ship's computer spoke.",
                "The computer had been damaged in an attack.",
                "The computer never answered.",
            ),
        ),
        (
            "Inspector Hale folded the letter into quarters, slipped it into his waistcoat pocket and said nothing at all to the widow.",
            (
                "The inspector kept the letter.",
                "The letter named the murderer.",
                "Hale read the letter aloud to the widow.",
            ),
        ),
        "By the third day in the forest the twins had eaten the last of the bread and were arguing about which way was north.",
        "The dragon was smaller than the songs had promised, barely the size of a plough horse, and it looked very tired.",
        "Somewhere below the window a dog barked twice, and Eleanor realised she had been holding her breath.",
        "He had rehearsed the apology all the way up the hill, but when she opened the door every word deserted him.",
        "The robot stacked the last crate, turned its camera toward the sunset and, for reasons nobody ever explained, waved.",
        "Mrs. Abernathy insisted that the parrot had learned to swear from its previous owner, a retired sea captain.",
    ],
    "government": [
        (
            "The department will accept public comments on the proposed rule for sixty days after its publication.",
            (
                "People can comment on the proposed rule for a limited time.",
                "Most of the comments will come from businesses.",
                "The department will not take any comments from the public on the rule.",
            ),
        ),
        (
            "Grants under the rural broadband program are limited to communities where fewer than half of households have high-speed internet.",
            (
                "Some communities cannot receive the broadband grants.",
                "The program was created within the last ten years.",
                "Any community may receive a grant, however many homes already have fast internet.",
            ),
        ),
        (
            "The audit found that the agency could not document how about 12 percent of its equipment purchases had been approved.",
            (
                "The agency lacked records for some of its purchases.",
                "Some of the equipment was bought for personal use.",
                "The audit confirmed that every purchase had been properly approved.",
            ),
        ),
        (
            "Speaking at the ceremony, the Secretary thanked the volunteers who had spent the winter repairing flood-damaged homes across the county.",
            (
                "The Secretary gave a speech.",
                "The volunteers received awards at the ceremony.",
                "The Secretary criticised the volunteers' work.",
            ),
        ),
        "Applicants who miss the March 1 deadline may still qualify if they can show that a medical emergency prevented them from filing on time.",
        "The new guidelines require all federal buildings to post evacuation maps on every floor by the end of the fiscal year.",
        "Since the program began, the number of children receiving free dental screenings in the state has nearly doubled.",
        "The report recommends that inspections of older bridges be carried out every year instead of every two years.",
        "Press inquiries should be directed to the Office of Public Affairs, which will respond within two business days.",
        "The committee heard testimony from farmers who said that late payments had forced some of them to sell equipment.",
    ],
    "slate": [
        (
            "The sitcom's second season abandons the office setting almost entirely, which is either a brave choice or a sign the writers ran out of jokes.",
            (
                "The show's second season mostly takes place outside the office.",
                "The sitcom was cancelled after its second season.",
                "The second season is set entirely in the office.",
            ),
        ),
        (
            "Every summer brings a new blockbuster about the end of the world, and every summer the audience seems a little less frightened.",
            (
                "Films about the end of the world come out regularly.",
                "These films make more money than comedies.",
                "Audiences grow more terrified by these films each year.",
            ),
        ),
        (
            "The candidate's memoir, ghostwritten or not, is a surprisingly candid account of his failed first business.",
            (
                "The memoir describes a business that failed.",
                "The memoir became a bestseller.",
                "The memoir never mentions any business of his.",
            ),
        ),
        (
            "Critics who dismissed the band as a novelty act in 1996 are now lining up to write about its influence.",
            (
                "Some critics have changed their minds about the band.",
                "The band has released a new album recently.",
                "Critics have always taken the band seriously.",
            ),
        ),
        "The magazine's readers were asked to name the most overrated invention of the century, and the fax machine won by a wide margin.",
        "There is something faintly absurd about a two-hundred-dollar sneaker marketed as a symbol of rebellion.",
        "The network insists the new quiz show is not a copy of the British original, though the set, the music and the host's catchphrase are identical.",
        "Coffee-shop culture, the columnist argues, has turned the simple act of ordering a drink into a vocabulary test.",
        "Her debut novel sold poorly, but it found a devoted audience among college students who passed their copies around.",
        "The senator's sudden interest in video-game violence happens to coincide with an election year.",
    ],
    "telephone": [
        (
            "well we we've lived here about twelve years now and uh the neighborhood's changed a lot you know lots of young families",
            (
                "The speaker has lived in the same place for over ten years.",
                "The speaker has children.",
                "The speaker moved into the neighborhood last year.",
            ),
        ),
        (
            "oh yeah i i do most of the gardening myself uh tomatoes mostly and some peppers when the weather cooperates",
            (
                "The speaker grows tomatoes.",
                "The speaker sells some of the vegetables.",
                "Someone else does all of the speaker's gardening.",
            ),
        ),
        (
            "um i think the schools around here are pretty good actually but uh the classes are just too big",
            (
                "The speaker has a complaint about class sizes.",
                "The speaker's children go to a local school.",
                "The speaker thinks the local schools are terrible.",
            ),
        ),
        (
            "we tried camping once with the kids and it rained the whole weekend so uh that was the end of that",
            (
                "The family went camping at least once.",
                "The family slept in a tent.",
                "The weather was dry and sunny the whole weekend.",
            ),
        ),
        "yeah i used to take the bus to work but uh now that they moved the office out past the highway i pretty much have to drive",
        "well you know my my husband's the one who keeps up with the budget i just uh i just try not to spend too much",
        "i don't know um it seems like every year the the taxes go up and you don't see the roads getting any better",
        "oh we love that restaurant uh we go there every time my parents come to visit",
        "right right and then uh you've got the the insurance on top of that which is just crazy",
        "um to be honest i haven't voted in a local election in a while uh i just never know who the candidates are",
    ],
    "travel": [
        (
            "The old harbour town is best explored on foot, since its lanes are too narrow for cars and most of them end in steps down to the water.",
            (
                "Walking is a good way to see the harbour town.",
                "The town has a popular fish market.",
                "Cars can drive easily along every lane in the town.",
            ),
        ),
        (
            "Boats to the outer islands leave twice daily in summer, but in winter the service drops to three crossings a week.",
            (
                "There are fewer boats to the islands in winter.",
                "The crossing to the islands takes about an hour.",
                "The boat timetable is the same all year round.",
            ),
        ),
        (
            "The monastery, perched on a cliff above the valley, can be reached by a steep path or, for the less energetic, by a small cable car.",
            (
                "There is more than one way to get to the monastery.",
                "The cable car closes in bad weather.",
                "The monastery stands on flat ground at the bottom of the valley.",
            ),
        ),
        (
            "Local markets open before dawn, and by ten o'clock the best fruit has usually been sold.",
            (
                "The markets start early in the morning.",
                "The markets also sell clothing.",
                "The best fruit is easiest to find late in the afternoon.",
            ),
        ),
        "Visitors who arrive during the spring festival should book rooms months in advance, as the town's few hotels fill quickly.",
        "The beach on the northern side of the bay is sheltered from the wind and safe for children, while the southern beach attracts surfers.",
        "The cathedral's stained-glass windows, restored after the war, are at their finest in the late afternoon light.",
        "A short drive inland brings you to villages where little has changed in a hundred years and English is rarely spoken.",
        "Entry to the national museum is free on the first Sunday of each month, when it can become very crowded.",
        "The hike to the waterfall takes about two hours each way; bring water, as there are no shops along the trail.",
    ],
    "nineeleven": [
        (
            "The commission's staff reviewed millions of pages of documents from government agencies while preparing the final report.",
            (
                "The commission examined documents from the government.",
                "Some of the documents are still classified.",
                "The commission did not look at any government records.",
            ),
        ),
        (
            "Airport checkpoints at the time were designed mainly to stop passengers carrying guns and large knives.",
            (
                "Checkpoints were meant to catch certain weapons.",
                "Checkpoint staff received only a few days of training.",
                "Checkpoints at the time were mainly looking for liquids.",
            ),
        ),
        (
            "Emergency crews from neighbouring towns drove into the city throughout the morning to offer help.",
            (
                "Help came from outside the city.",
                "Some of the crews were volunteers.",
                "No one from other towns came to help.",
            ),
        ),
        (
            "The report concludes that several agencies held pieces of information that were never brought together.",
            (
                "The report found that information was not shared well.",
                "The agencies have since changed how they share information.",
                "The report says all the information was combined in one place.",
            ),
        ),
        "Families of those who died pressed Congress to create an independent commission to investigate the attacks.",
        "Within hours, military fighter jets were patrolling the skies over several major cities.",
        "Many people at the site that morning later described how strangers helped them find their way out.",
        "The commission held public hearings at which officials from two administrations gave testimony.",
        "Phone calls from passengers gave people on the ground some of the first information about what was happening on board.",
        "The report recommended creating a single official to oversee the nation's intelligence agencies.",
    ],
    "facetoface": [
        (
            "so uh my grandmother she she ran the little store on the corner for like thirty years and everybody knew her",
            (
                "The speaker's grandmother ran a store.",
                "The store sold groceries.",
                "Nobody in the area knew the speaker's grandmother.",
            ),
        ),
        (
            "and i was like no way i'm not driving in that snow so we just stayed home and um played cards all night",
            (
                "The speaker did not drive in the snow.",
                "The speaker won most of the card games.",
                "The speaker drove through the snow to a party.",
            ),
        ),
        (
            "yeah when i first moved to Charlotte um there wasn't nearly as much traffic you could get anywhere in like twenty minutes",
            (
                "The speaker has lived in Charlotte for some time.",
                "The speaker moved to Charlotte for a job.",
                "Traffic in Charlotte has got lighter since the speaker arrived.",
            ),
        ),
        (
            "my brother he um he coaches the the little league team and they actually won the whole thing last year",
            (
                "The speaker's brother coaches a team.",
                "The speaker went to the final game.",
                "The team lost every game last year.",
            ),
        ),
        "we used to go down to the lake every Sunday after church and um my dad would grill hot dogs",
        "i mean i i liked the job okay but the hours were just um they were killing me",
        "oh she's a sweetheart she she brought us a whole pie when we moved in",
        "so we're sitting there waiting and waiting and uh finally the guy comes out and says the kitchen's closed",
        "uh honestly i didn't even know how to use a computer till my daughter showed me like five years ago",
        "you know it's funny um i never thought i'd end up teaching but i really love it",
    ],
    "letters": [
        (
            "Thanks to friends like you, the clinic treated more than three thousand patients last year, many of whom had nowhere else to go.",
            (
                "The clinic treated patients last year.",
                "The clinic plans to hire another doctor.",
                "The clinic saw fewer than a hundred patients last year.",
            ),
        ),
        (
            "I am writing to ask whether you would consider renewing your membership before the end of the month.",
            (
                "The letter asks the reader to do something.",
                "The membership costs forty dollars a year.",
                "The writer asks the reader to cancel their membership.",
            ),
        ),
        (
            "Enclosed you will find a reply card and a postage-paid envelope for your convenience.",
            (
                "The letter came with an envelope.",
                "Most people send the reply card back.",
                "Readers must pay for the stamp themselves.",
            ),
        ),
        (
            "Our scholarship fund has helped two hundred young people become the first in their families to attend college.",
            (
                "Some of the students' parents did not go to college.",
                "Most of the scholarship students studied nursing.",
                "The fund has never helped anyone attend college.",
            ),
        ),
        "Every dollar you give this season will be matched by a local business, doubling the impact of your gift.",
        "As a longtime supporter of the orchestra, you already know how much music means to the children in our schools.",
        "We cannot do this work without volunteers, and we would be delighted to have you join us on a Saturday morning.",
        "Last year's flood destroyed our food bank's warehouse, but within weeks our neighbours had helped us find a new home.",
        "Please accept our sincere thanks for your generous gift to the animal shelter's building fund.",
        "If you have already sent your contribution, please disregard this reminder, and thank you.",
    ],
    "oup": [
        (
            "Before the mechanised loom, weaving a single bolt of cloth could occupy a household for several weeks.",
            (
                "Weaving used to take a long time.",
                "Women did most of the weaving in these households.",
                "Before the mechanised loom, a household could weave a bolt of cloth in an hour.",
            ),
        ),
        (
            "Most infants begin to respond to their own names somewhere between five and seven months of age.",
            (
                "Babies usually learn to react to their names in their first year.",
                "Girls respond to their names earlier than boys.",
                "Infants cannot respond to their names until they are three years old.",
            ),
        ),
        (
            "Cotton mills were often built beside fast-flowing rivers, which supplied the power to drive the machinery.",
            (
                "Rivers were used to power some mills.",
                "The mills employed many children.",
                "Cotton mills were always built far from any water.",
            ),
        ),
        (
            "Children who are read to regularly tend to develop larger vocabularies by the time they start school.",
            (
                "Reading to children is linked with knowing more words.",
                "These children also do better at arithmetic.",
                "Being read to makes no difference to a child's vocabulary.",
            ),
        ),
        "The introduction of synthetic dyes in the nineteenth century made brightly coloured fabrics affordable for ordinary families.",
        "Toddlers often play alongside other children without interacting with them, a stage sometimes called parallel play.",
        "Wool remained the country's most valuable export until cotton overtook it during the industrial revolution.",
        "By the age of four, many children can tell a simple story with a beginning, a middle and an end.",
        "Spinning was among the first stages of cloth production to move from homes into factories.",
        "Researchers caution that the ages given for developmental milestones are averages, and healthy children vary widely.",
    ],
    "verbatim": [
        (
            "The word 'salary' is often said to come from the Latin for salt, though the story that Roman soldiers were paid in salt is doubtful.",
            (
                "There is a story connecting 'salary' with salt.",
                "Most English speakers have heard this story.",
                "Everyone agrees that Roman soldiers were paid in salt.",
            ),
        ),
        (
            "English spelling settled down only after printers and dictionary makers began to agree on standard forms.",
            (
                "English spelling was less fixed in the past.",
                "Printers preferred shorter spellings to save space.",
                "English spelling has never changed.",
            ),
        ),
        (
            "Some speakers use 'anymore' in positive sentences, as in 'Gas is expensive anymore', a usage that puzzles others.",
            (
                "'Anymore' is not always used with a negative.",
                "This usage is most common in the Midwest.",
                "Nobody uses 'anymore' without a negative.",
            ),
        ),
        (
            "A palindrome reads the same backward as forward, and English has surprisingly few long ones that make sense.",
            (
                "A palindrome can be read in either direction.",
                "The longest sensible English palindrome has more than twenty letters.",
                "English is full of long, meaningful palindromes.",
            ),
        ),
        "The plural of 'octopus' has provoked more letters to this magazine than any other question of usage.",
        "Many words borrowed from Dutch, such as 'cookie' and 'boss', came into American English from early settlers in New York.",
        "Crossword setters prize words with many vowels, since they are easier to fit into a grid.",
        "Place names often preserve words that have otherwise vanished from the language.",
        "A reader writes to ask why we drive on a parkway but park on a driveway.",
        "The first English dictionaries listed only hard words, on the assumption that everyone knew the easy ones.",
    ],
    "captions": [
        (
            "A man in an orange vest directs traffic around a road repair crew.",
            (
                "A person is working near a road.",
                "The man is a police officer.",
                "The road is empty of cars and people.",
            ),
        ),
        (
            "Two young girls in swimsuits run through a sprinkler on a lawn.",
            ("Children are outside.", "It is a hot summer day.", "The girls are sitting indoors watching television."),
        ),
        (
            "A brown dog leaps to catch a frisbee in a park.",
            ("An animal is jumping.", "The dog's owner threw the frisbee.", "The dog is asleep on a couch."),
        ),
        (
            "An elderly woman sells flowers from a wooden cart at a street market.",
            ("Flowers are for sale.", "The woman grew the flowers herself.", "The market is closed and empty."),
        ),
        "A group of cyclists in matching jerseys ride up a steep mountain road.",
        "A chef in a white hat slices vegetables in a busy restaurant kitchen.",
        "A little boy in a red jacket holds his father's hand while crossing the street.",
        "Three musicians play guitars on a stage in front of a small crowd.",
        "A woman in a blue dress reads a book on a bench beside a lake.",
        "Several people wait at a bus stop in the rain, holding umbrellas.",
    ],
}


def prompt_id(genre_slug: str, number: int) -> str:
    return f"{genre_slug}-demo-{number}"


def demo_split(genre: Genre, index: int) -> str:
    pattern = TRAINING_SPLITS if genre.is_training else HELD_OUT_SPLITS
    return pattern[index % len(pattern)]


def premise_entries(genre_slug: str) -> Iterator[tuple[str, Sequence[str] | None]]:
    """(text, hypotheses or None) for each demo premise of a genre."""
    for entry in PREMISES[genre_slug]:
        if isinstance(entry, str):
            yield entry, None
        else:
            text, hypotheses = entry
            yield str(text), tuple(hypotheses)
